"""State admission and eviction policies for the hybrid prefix cache.

- `choice`: the closed sets (`StateAdmission`, `StateEviction`) and `build_policies`;
- `admission`: when a state enters the cache (engine, Marconi, reuse-filtered, ghost-branch);
- `eviction`: which state leaves first (LRU, keep-junctions, FLOP-aware with online α);
- `lookahead`: the waiting queue's prefixes; queue-branch admission, queue-aware eviction;
- `ghost`: prefix hashes and the bounded ghost table the admission policies consult;
- `slot_economy`: what-if, never the default: track slots from a shared pool (slots freed);
- `lossy_states`: lossy what-if, never the default: 8-bit cached checkpoints (slots gained).
"""

from __future__ import annotations

from kvledger.cache.policies.admission import CheckpointEvent, Ticket
from kvledger.cache.policies.choice import (
    StateAdmission,
    StateEviction,
    StatePolicies,
    build_policies,
)

__all__ = ["CheckpointEvent", "StateAdmission", "StateEviction", "StatePolicies", "Ticket",
           "build_policies"]
