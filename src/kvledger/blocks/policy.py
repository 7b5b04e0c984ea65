"""The closed sets of state policies on vLLM's block cache, as the CLI names them.

`BlockPolicy()` is vLLM 0.33's own rule (admission `vllm`, eviction `lru`): the coordinator's
default, so a replay or a serving run that names no policy is what vLLM does. A policy is a
frozen choice; `build_admission` makes the per-run rule (the ghost table has state).

>>> p = BlockPolicy(StateAdmission.GHOST_JUNCTION, BlockEviction.DEAD_FIRST)
>>> p.label, BlockPolicy().is_vllm, build_admission(p).name
('ghost-junction + dead-first', True, 'ghost-junction')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from kvledger.blocks.admission import (
    GhostJunction,
    JunctionOnly,
    StateAdmissionRule,
    VllmAdmission,
)
from kvledger.blocks.eviction import DeadFirst, LruEviction

# Block hashes the ghost table remembers: a 1,152-token block each on GLM-5.3-Flash, so
# 2^20 of them name a billion prompt tokens, more than any trace replayed here.
GHOST_CAPACITY_BLOCKS = 1 << 20


class StateAdmission(Enum):
    VLLM = "vllm"
    JUNCTION_ONLY = "junction-only"
    GHOST_JUNCTION = "ghost-junction"


class BlockEviction(Enum):
    LRU = "lru"
    DEAD_FIRST = "dead-first"


@dataclass(frozen=True, slots=True)
class BlockPolicy:
    admission: StateAdmission = StateAdmission.VLLM
    eviction: BlockEviction = BlockEviction.LRU
    ghost_capacity_blocks: int = GHOST_CAPACITY_BLOCKS

    @property
    def label(self) -> str:
        return f"{self.admission.value} + {self.eviction.value}"

    @property
    def is_vllm(self) -> bool:
        return (self.admission, self.eviction) == (StateAdmission.VLLM, BlockEviction.LRU)


VLLM_POLICY = BlockPolicy()  # vLLM 0.33's own rule, every cache's default


def build_admission(policy: BlockPolicy) -> StateAdmissionRule:
    match policy.admission:
        case StateAdmission.VLLM:
            return VllmAdmission()
        case StateAdmission.JUNCTION_ONLY:
            return JunctionOnly()
        case StateAdmission.GHOST_JUNCTION:
            return GhostJunction(policy.ghost_capacity_blocks)


def build_eviction(policy: BlockPolicy, *, attention_group: int,
                   mamba_groups: Sequence[int]) -> LruEviction:
    match policy.eviction:
        case BlockEviction.LRU:
            return LruEviction()
        case BlockEviction.DEAD_FIRST:
            return DeadFirst(attention_group=attention_group, mamba_groups=mamba_groups)
