"""Kimi delta attention (KDA): which layers are KDA, and their state shape.

Shared by GLM-5.3 (glm5_next) and Kimi-Linear, whose `linear_attn_config` lists the KDA layers
and the full-attention layers. The two lists must name every decoder layer exactly once, but
the numbering differs: Kimi-Linear counts from 1 (SGLang's KimiLinearConfig.is_kda_layer tests
`layer_idx + 1 in kda_layers`), GLM-5.3-Flash from 0 (Glm5NextTextConfig.is_kda_layer tests
`layer_idx in kda_layers`). We detect it from the union of the two lists, which must be
exactly 0..N−1 or exactly 1..N for N = num_hidden_layers; anything else is a broken config. Both numberings cannot fit at once, so the detection is never ambiguous.

State (SGLang's KimiLinearStateShape.create(num_heads, head_dim, conv_kernel_size)): the conv
state holds the last K − 1 inputs of the q, k and v short convolutions (each num_heads ×
head_dim channels); the temporal state is one head_dim × head_dim matrix per head.

>>> from kvledger.model.reader import ConfigReader
>>> linear = ConfigReader({"kda_layers": [1, 2, 3, 5], "full_attn_layers": [4, 6]}, "c.json")
>>> sorted(kda_layer_ids(linear, num_layers=6))
[0, 1, 2, 4]
"""

from __future__ import annotations

from kvledger.model.arch import HeadGroup, LinearKind, StateShape
from kvledger.model.reader import ConfigReader


def kda_layer_ids(linear: ConfigReader, num_layers: int) -> frozenset[int]:
    """0-based ids of the KDA layers, whichever numbering the config uses."""
    kda = linear.int_list("kda_layers")
    full = linear.int_list("full_attn_layers")
    for key, ids in (("kda_layers", kda), ("full_attn_layers", full)):
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        if repeated:
            raise linear.error(key, f"lists layers {repeated} more than once")
    both = sorted(set(kda) & set(full))
    if both:
        raise linear.error(
            "kda_layers", f"and full_attn_layers both list layers {both} (expected each in one)"
        )
    named = set(kda) | set(full)
    if named == set(range(num_layers)):
        first = 0
    elif named == set(range(1, num_layers + 1)):
        first = 1
    else:
        raise linear.error(
            "kda_layers",
            f"and full_attn_layers together name {len(named)} layers from {min(named, default=0)} "
            f"to {max(named, default=0)} (expected num_hidden_layers={num_layers} layers, "
            f"numbered 0..{num_layers - 1} or 1..{num_layers})",
        )
    return frozenset(i - first for i in kda)


def kda_state(linear: ConfigReader) -> StateShape:
    num_heads = linear.int("num_heads", minimum=1)
    head_dim = linear.int("head_dim", minimum=1)
    groups = tuple(HeadGroup(name=n, num_heads=num_heads, head_dim=head_dim) for n in "qkv")
    return StateShape(
        kind=LinearKind.KDA,
        conv_kernel=linear.int("short_conv_kernel_size", minimum=2),
        conv_groups=groups,
        temporal_heads=num_heads,
        temporal_dims=(head_dim, head_dim),
    )
