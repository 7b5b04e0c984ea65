"""jamba (AI21 Jamba): Mamba-1 and GQA layers, MoE on every `expert_layer_period`-th layer.

Layer layout, as transformers' JambaConfig.layers_block_type derives it: layer i is attention
when `i % attn_layer_period == attn_layer_offset`, Mamba-1 otherwise; its FFN is an MoE when
`i % expert_layer_period == expert_layer_offset`, a dense gated MLP otherwise. Jamba-1.5-Mini
(32 layers, period 8 offset 4) has attention on layers 4, 12, 20, 28 and 28 Mamba-1 layers.

Mamba-1 state per layer (d_inner = mamba_expand × hidden_size), as vLLM's
MambaStateShapeCalculator.mamba1_state_shape gives it (model_executor/layers/mamba/
mamba_utils.py): conv (d_conv − 1, d_inner / tp) and temporal (d_inner / tp, d_state); no extra
conv rows for speculative tokens. The state has no heads: each of the d_inner channels is its
own "head" of width 1, so TP shards the channels.

Engines: vLLM serves it with its native JambaForCausalLM. SGLang has no Jamba model class, and
its Transformers fallback refuses it (see kvledger.sglang.resolve.NO_SGLANG_MODEL_CLASS).

Weights count the matrices (embeddings, attention, Mamba-1 in/x/dt/out projections, conv and
A, dense MLPs, routers and experts); biases, D and norms are left out (under 0.01 %).

>>> s = mamba1_state(d_inner=8192, d_state=16, conv_kernel=4)
>>> s.conv_shape(attn_tp=1), s.temporal_shape(attn_tp=2)
((3, 8192), (4096, 16))
"""

from __future__ import annotations

from kvledger.model import weights
from kvledger.model.arch import (
    AttnKind,
    Family,
    HeadGroup,
    LayerKind,
    LayerSpec,
    LinearKind,
    ModelArch,
    StateShape,
)
from kvledger.model.context import context_tokens
from kvledger.model.families.gqa import gqa_params, gqa_shape
from kvledger.model.params import ParamCounts
from kvledger.model.reader import ConfigReader


def mamba1_state(*, d_inner: int, d_state: int, conv_kernel: int) -> StateShape:
    return StateShape(
        kind=LinearKind.MAMBA1,
        conv_kernel=conv_kernel,
        conv_groups=(HeadGroup(name="x", num_heads=d_inner, head_dim=1),),
        temporal_heads=d_inner,
        temporal_dims=(d_state,),
    )


def mamba1_mixer(*, hidden: int, d_inner: int, d_state: int, dt_rank: int,
                 conv_kernel: int) -> int:
    return (
        hidden * 2 * d_inner  # in_proj: x and the gate z
        + d_inner * conv_kernel  # conv1d (depthwise)
        + d_inner * (dt_rank + 2 * d_state)  # x_proj: dt, B, C
        + dt_rank * d_inner  # dt_proj
        + d_inner * d_state  # A_log
        + d_inner * hidden  # out_proj
    )


def _periodic(root: ConfigReader, what: str, num_layers: int) -> set[int]:
    """Layers where `i % {what}_layer_period == {what}_layer_offset` (JambaConfig defaults)."""
    defaults = {"attn": (8, 4), "expert": (2, 1)}[what]
    period = root.int(f"{what}_layer_period", defaults[0], minimum=1)
    offset = root.int(f"{what}_layer_offset", defaults[1], minimum=0)
    if offset >= period:
        raise root.error(f"{what}_layer_offset",
                         f"is {offset} (expected below {what}_layer_period={period})")
    return {i for i in range(num_layers) if i % period == offset}


def _dt_rank(root: ConfigReader, hidden: int) -> int:
    # JambaConfig: "auto" (the default) means ceil(hidden_size / 16)
    if root.raw("mamba_dt_rank", "auto") == "auto":
        return -(-hidden // 16)
    return root.int("mamba_dt_rank", minimum=1)


def read(root: ConfigReader, name: str) -> ModelArch:
    num_layers = root.int("num_hidden_layers", minimum=1)
    attention = _periodic(root, "attn", num_layers)
    if not attention:
        raise root.error("attn_layer_offset", f"puts no attention layer in {num_layers} layers "
                         "(expected a hybrid)")
    moe_layers = _periodic(root, "expert", num_layers)
    hidden = root.int("hidden_size", minimum=1)
    d_inner = root.int("mamba_expand", minimum=1) * hidden
    d_state = root.int("mamba_d_state", minimum=1)
    conv_kernel = root.int("mamba_d_conv", minimum=2)
    gqa = gqa_shape(root)
    intermediate = root.int("intermediate_size", minimum=1)
    num_experts = root.int("num_experts", minimum=1)
    dense = weights.mlp(hidden=hidden, intermediate=intermediate)
    embedding, lm_head = weights.embedding_parts(root)
    params = ParamCounts(
        embedding=embedding,
        lm_head=lm_head,
        attention=len(attention) * gqa_params(root, gqa),
        linear_mixers=(num_layers - len(attention)) * mamba1_mixer(
            hidden=hidden, d_inner=d_inner, d_state=d_state, conv_kernel=conv_kernel,
            dt_rank=_dt_rank(root, hidden)),
        mlp=(num_layers - len(moe_layers)) * dense + len(moe_layers) * hidden * num_experts,
        experts=len(moe_layers) * num_experts * dense,
        vision=0,
    )
    return ModelArch(
        name=name,
        source=root.source,
        family=Family.JAMBA,
        model_type=root.str("model_type"),
        layers=tuple(
            LayerSpec(index=i, kind=LayerKind.FULL if i in attention else LayerKind.LINEAR)
            for i in range(num_layers)
        ),
        attn=AttnKind.GQA,
        gqa=gqa,
        state=mamba1_state(d_inner=d_inner, d_state=d_state, conv_kernel=conv_kernel),
        max_context_tokens=context_tokens(root),
        num_params=params.total,
        params=params,
        quant=weights.quant_method(root),
        weight_bytes_per_param=weights.bytes_per_param(root),
    )
