"""Mamba2 state shape (Nemotron-H, Falcon-H1) and the config-pinned state dtype.

SGLang's Mamba2StateShape.create (python/sglang/srt/configs/mamba_utils.py):
- conv state: the last K − 1 inputs of the depthwise conv over x, B and C, i.e.
  `heads·head_dim + 2·n_groups·d_state` channels split across attention-TP ranks. When the
  ranks outnumber the groups, each rank holds a whole replicated group
  (`extra_groups_for_head_shards` raises n_groups to tp), hence `replicate_when_indivisible`.
  SGLang stores it as (channels, K − 1); the byte count is the same as our (K − 1, channels).
- temporal (SSM) state: (heads / tp, head_dim, d_state).

>>> s = mamba2_state(heads=24, head_dim=64, groups=1, d_state=128, conv_kernel=4,
...                  ssm_dtype=None)
>>> s.conv_shape(attn_tp=1), s.conv_shape(attn_tp=2), s.temporal_shape(attn_tp=2)
((3, 1792), (3, 1024), (12, 64, 128))
"""

from __future__ import annotations

from kvledger.model import weights
from kvledger.model.arch import HeadGroup, LinearKind, StateShape
from kvledger.model.reader import ConfigReader

# Values SGLang's mamba2_state_dtype accepts for a config's `mamba_ssm_dtype`.
SSM_DTYPES = ("bfloat16", "float16", "float32")


def mamba2_state(
    *,
    heads: int,
    head_dim: int,
    groups: int,
    d_state: int,
    conv_kernel: int,
    ssm_dtype: str | None,
) -> StateShape:
    return StateShape(
        kind=LinearKind.MAMBA2,
        conv_kernel=conv_kernel,
        conv_groups=(
            HeadGroup(name="x", num_heads=heads, head_dim=head_dim),
            HeadGroup(
                name="B", num_heads=groups, head_dim=d_state, replicate_when_indivisible=True
            ),
            HeadGroup(
                name="C", num_heads=groups, head_dim=d_state, replicate_when_indivisible=True
            ),
        ),
        temporal_heads=heads,
        temporal_dims=(head_dim, d_state),
        ssm_dtype_default=ssm_dtype,
    )


def mamba2_params(hidden: int, state: StateShape) -> int:
    """Mixer weights of one Mamba2 layer, read back from the state shape it keeps."""
    x, b, _ = state.conv_groups
    return weights.mamba2_mixer(
        hidden=hidden,
        heads=x.num_heads,
        head_dim=x.head_dim,
        groups=b.num_heads,
        d_state=b.head_dim,
        conv_kernel=state.conv_kernel,
    )


def pinned_ssm_dtype(text: ConfigReader) -> str | None:
    """`mamba_ssm_dtype` when the config pins it (SGLang: the env var still overrides it)."""
    dtype = text.str("mamba_ssm_dtype", None)
    if dtype is not None and dtype not in SSM_DTYPES:
        raise text.error("mamba_ssm_dtype", f"is {dtype!r} (expected one of {list(SSM_DTYPES)})")
    return dtype
