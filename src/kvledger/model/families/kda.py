"""Kimi delta attention (KDA) state shape, shared by GLM-5.3 and Kimi-Linear.

SGLang's KimiLinearStateShape.create(num_heads, head_dim, conv_kernel_size): the conv state
holds the last K − 1 inputs of the q, k and v short convolutions (each num_heads × head_dim
channels); the temporal state is one head_dim × head_dim matrix per head.
"""

from __future__ import annotations

from kvledger.model.arch import HeadGroup, LinearKind, StateShape
from kvledger.model.reader import ConfigReader


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
