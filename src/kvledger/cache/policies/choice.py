"""The closed sets of state policies, as the CLI names them, and how each is built.

`StateAdmission.ENGINE` and `StateEviction.LRU` are the engine's behaviour (the defaults:
replays without a policy flag are what SGLang does). Every policy here is lossless.

>>> chosen = build_policies(StateAdmission.GHOST_BRANCH, StateEviction.KEEP_JUNCTIONS,
...                         flops_of=float, slot_bytes=1, page_bytes=1, num_slots=8)
>>> chosen.admission.name, chosen.eviction.name, chosen.label
('ghost-branch', 'keep-junctions', 'ghost-branch + keep-junctions')
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from kvledger.cache.policies.admission import (
    AdmissionPolicy,
    EngineAdmission,
    GhostBranchAdmission,
    MarconiAdmission,
    ReuseFilteredAdmission,
)
from kvledger.cache.policies.density import HitDensity
from kvledger.cache.policies.eviction import FlopAware, FlopsOf, KeepJunctions, LruEviction
from kvledger.cache.policies.lookahead import QueueAware, QueueBranchAdmission, QueueLookahead
from kvledger.cache.policies.segment import SegmentBranchAdmission
from kvledger.cache.policies.spent import SpentFirst

# Prefixes a ghost table remembers: 8 B of key each, so 2^20 entries cost tens of MB of
# Python objects at most; enough for a million grid points of distinct prompts.
GHOST_CAPACITY = 1 << 20


class StateAdmission(Enum):
    ENGINE = "engine"
    MARCONI = "marconi"
    REUSE_FILTERED = "reuse-filtered"
    GHOST_BRANCH = "ghost-branch"
    SEGMENT_BRANCH = "segment-branch"
    QUEUE_BRANCH = "queue-branch"

    @property
    def reads_queue(self) -> bool:
        """Whether the policy reads the waiting queue (`lookahead.QueueLookahead`)."""
        return self is StateAdmission.QUEUE_BRANCH


class StateEviction(Enum):
    LRU = "lru"
    FLOP_AWARE = "flop-aware"
    KEEP_JUNCTIONS = "keep-junctions"
    SPENT_FIRST = "spent-first"
    SPENT_FIRST_FLOP_AWARE = "spent-first-flop-aware"
    HIT_DENSITY = "hit-density"
    SPENT_FIRST_DENSITY = "spent-first-density"
    QUEUE_AWARE = "queue-aware"

    @property
    def reads_queue(self) -> bool:
        """Whether the policy reads the waiting queue (`lookahead.QueueLookahead`)."""
        return self is StateEviction.QUEUE_AWARE

    @property
    def prices_flops(self) -> bool:
        """Whether the policy needs the prefill FLOPs a state saves (`flops_of`)."""
        match self:
            case (StateEviction.FLOP_AWARE | StateEviction.SPENT_FIRST_FLOP_AWARE
                  | StateEviction.QUEUE_AWARE):
                return True
            case (StateEviction.LRU | StateEviction.KEEP_JUNCTIONS | StateEviction.SPENT_FIRST
                  | StateEviction.HIT_DENSITY | StateEviction.SPENT_FIRST_DENSITY):
                return False


@dataclass(frozen=True, slots=True)
class StatePolicies:
    admission: AdmissionPolicy
    eviction: LruEviction
    lookahead: QueueLookahead | None = None  # the waiting queue's prefixes, if a policy reads it

    @property
    def label(self) -> str:
        return f"{self.admission.name} + {self.eviction.name}"

    @property
    def needs_hashes(self) -> bool:
        return (self.admission.needs_hashes or self.eviction.needs_hashes
                or self.lookahead is not None)


def engine_policies() -> StatePolicies:
    """The engine's own behaviour: SGLang's checkpoints and LRU state eviction."""
    return StatePolicies(admission=EngineAdmission(), eviction=LruEviction())


def build_policies(admission: StateAdmission, eviction: StateEviction, *, flops_of: FlopsOf,
                   slot_bytes: int, page_bytes: int, num_slots: int,
                   ghost_capacity: int = GHOST_CAPACITY) -> StatePolicies:
    """`flops_of(pages)`: prefill FLOPs a state that deep saves; `num_slots`: the device
    state pool (FLOP-aware remembers that many would-be victims per candidate α). Policies
    that read the waiting queue share one `QueueLookahead` (`StatePolicies.lookahead`)."""
    ahead = QueueLookahead() if admission.reads_queue or eviction.reads_queue else None
    match admission:
        case StateAdmission.ENGINE:
            admit: AdmissionPolicy = EngineAdmission()
        case StateAdmission.MARCONI:
            admit = MarconiAdmission()
        case StateAdmission.REUSE_FILTERED:
            admit = ReuseFilteredAdmission(ghost_capacity)
        case StateAdmission.GHOST_BRANCH:
            admit = GhostBranchAdmission(ghost_capacity)
        case StateAdmission.SEGMENT_BRANCH:
            admit = SegmentBranchAdmission(ghost_capacity)
        case StateAdmission.QUEUE_BRANCH:
            admit = QueueBranchAdmission(ghost_capacity, ahead)
    def flop_aware() -> FlopAware:
        return FlopAware(flops_of=flops_of, slot_bytes=slot_bytes, page_bytes=page_bytes,
                         memory=4 * max(num_slots, 1))

    match eviction:
        case StateEviction.LRU:
            evict: LruEviction = LruEviction()
        case StateEviction.KEEP_JUNCTIONS:
            evict = KeepJunctions()
        case StateEviction.FLOP_AWARE:
            evict = flop_aware()
        case StateEviction.SPENT_FIRST:
            evict = SpentFirst(LruEviction(), capacity=ghost_capacity)
        case StateEviction.SPENT_FIRST_FLOP_AWARE:
            evict = SpentFirst(flop_aware(), capacity=ghost_capacity, name=eviction.value)
        case StateEviction.HIT_DENSITY:
            evict = HitDensity()
        case StateEviction.SPENT_FIRST_DENSITY:
            evict = SpentFirst(HitDensity(), capacity=ghost_capacity, name=eviction.value)
        case StateEviction.QUEUE_AWARE:
            evict = QueueAware(flop_aware(), ahead)
    return StatePolicies(admission=admit, eviction=evict, lookahead=ahead)
