"""State admission: at which points of a request a linear-attention state enters the cache.

Every policy is lossless: it only decides which states are kept, and a request always
resumes from a state that is exactly the one a full prefill would have produced.

A request meets the cache at three kinds of checkpoint (`CheckpointEvent`), in pages:

* CHUNK_END — a prefill chunk that does not finish the prompt (SGLang's
  `cache_unfinished_req`); the tracked state is at a grid point of the chunk or at the
  request's branch point;
* PREFILL_END — the prompt's last chunk ran and the request decodes on (SGLang caches every
  prefill forward of a request that goes on running: `cache_unfinished_req`);
* FINISH — the request ends (`cache_finished_req`) with its last tracked state.

Admission is asked once per request for a `Ticket` (its branch point: where to track a
state during prefill) and then at each checkpoint whether to cache it.

Policies:

* `EngineAdmission` — SGLang's: the tree's branch point (`mamba_branching_seqlen`), every
  prefill forward, every finish.
* `MarconiAdmission` — Marconi (Pan et al., MLSys 2025): states only at branch points found
  by speculative insertion (here the tree match, which walks the prompt through the tree and
  reports where it leaves the cached KV) and at the last decoded token (FINISH); chunk ends
  that are not the branch point are declined.
* `ReuseFilteredAdmission` — a checkpoint is cached only where its prefix has been seen in
  an earlier request (a bounded ghost table of prefix hashes); branch points always.
* `GhostBranchAdmission` — Marconi's rule with branch points found in the ghost table too:
  a request's branch point is its longest prefix any earlier request shared, even after the
  tree lost that prefix's KV (Marconi's speculative insertion sees only what is cached).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from enum import Enum

import numpy as np

from kvledger.cache.policies.ghost import GhostTable, prefix_hashes


class CheckpointEvent(Enum):
    CHUNK_END = "chunk end"
    PREFILL_END = "prefill end"
    FINISH = "finish"


@dataclass(slots=True, kw_only=True)
class Ticket:
    """What admission decided for one request when it was admitted."""

    branch_pages: int | None  # track a state here during prefill; None: nowhere
    hashes: np.ndarray | None = None  # prefix hashes of the sequence (ghost policies)
    seen_pages: int = 0  # the prompt's longest grid prefix an earlier request had
    then_pages: int | None = None  # a deeper point to track after the branch point
    segment_pages: int | None = None  # the prompt's last segment boundary (segment-branch)


class AdmissionPolicy(ABC):
    name: str
    needs_hashes = False  # whether tickets carry prefix hashes

    def ticket(self, *, keys: np.ndarray, prompt_pages: int, usable_pages: int,
               tree_branch_pages: int | None, grid_pages: int,
               hashes: np.ndarray | None = None) -> Ticket:
        """Called once at admission. `keys`: the sequence's page keys; `prompt_pages`:
        pages the match may cover; `usable_pages`: the cached prefix with a state;
        `tree_branch_pages`: the tree's branch point (None: none)."""
        return Ticket(branch_pages=tree_branch_pages, hashes=hashes)

    @abstractmethod
    def admit(self, event: CheckpointEvent, ticket: Ticket, pages: int) -> bool:
        """Whether the state after the first `pages` pages enters the cache."""

    def check_integrity(self) -> None:
        return None


class EngineAdmission(AdmissionPolicy):
    name = "engine"

    def admit(self, event: CheckpointEvent, ticket: Ticket, pages: int) -> bool:
        return True


def _at_branch(ticket: Ticket, pages: int) -> bool:
    return ticket.branch_pages is not None and pages == ticket.branch_pages


class MarconiAdmission(AdmissionPolicy):
    name = "marconi"

    def admit(self, event: CheckpointEvent, ticket: Ticket, pages: int) -> bool:
        return event is CheckpointEvent.FINISH or _at_branch(ticket, pages)


class _GhostPolicy(AdmissionPolicy):
    """Keeps a ghost table of the grid-point prefixes of every admitted prompt; a ticket
    records how deep the request's prompt had been seen before it (`seen_pages`)."""

    needs_hashes = True

    def __init__(self, capacity: int) -> None:
        self.ghost = GhostTable(capacity)

    def _seen_then_record(self, keys: np.ndarray, hashes: np.ndarray | None,
                          prompt_pages: int, grid_pages: int) -> tuple[np.ndarray, int]:
        hashes = prefix_hashes(keys) if hashes is None else hashes
        grid_points = hashes[grid_pages - 1:prompt_pages:grid_pages]  # states live there only
        seen = self.ghost.deepest_seen(grid_points, len(grid_points)) * grid_pages
        self.ghost.add(grid_points)
        return hashes, seen

    def check_integrity(self) -> None:
        self.ghost.check_integrity()


class ReuseFilteredAdmission(_GhostPolicy):
    name = "reuse-filtered"

    def ticket(self, *, keys: np.ndarray, prompt_pages: int, usable_pages: int,
               tree_branch_pages: int | None, grid_pages: int,
               hashes: np.ndarray | None = None) -> Ticket:
        hashes, seen = self._seen_then_record(keys, hashes, prompt_pages, grid_pages)
        return Ticket(branch_pages=tree_branch_pages, hashes=hashes, seen_pages=seen)

    def admit(self, event: CheckpointEvent, ticket: Ticket, pages: int) -> bool:
        if _at_branch(ticket, pages):
            return True
        return event is not CheckpointEvent.PREFILL_END and 0 < pages <= ticket.seen_pages


class GhostBranchAdmission(_GhostPolicy):
    """Branch points from the tree and the ghost table; finish states only while they pay.

    A finish state (Marconi's last decoded token) is reused only when a later prompt extends
    the whole finished sequence (multi-turn chat). Every finish prefix is remembered in a
    second ghost table whether or not its state was cached, and each admitted prompt that
    extends one counts as a reuse. Finish states are cached while the reuse rate, over
    finishes decaying by half every `window` finishes, is at least `finish_reuse_rate`
    (and during the first `window` finishes, before there is evidence).
    """

    name = "ghost-branch"

    def __init__(self, capacity: int, *, finish_reuse_rate: float = 0.25,
                 window: int = 64) -> None:
        super().__init__(capacity)
        self.finish_ghost = GhostTable(capacity)
        self.finish_reuse_rate = finish_reuse_rate
        self.window = window
        self.finishes = 0  # finish prefixes recorded
        self.weight = 0.0  # decayed finishes
        self.reused = 0.0  # decayed reuses of them

    @property
    def finish_states_pay(self) -> bool:
        if self.finishes < self.window:
            return True
        return self.reused >= self.finish_reuse_rate * self.weight

    def ticket(self, *, keys: np.ndarray, prompt_pages: int, usable_pages: int,
               tree_branch_pages: int | None, grid_pages: int,
               hashes: np.ndarray | None = None) -> Ticket:
        hashes, seen = self._seen_then_record(keys, hashes, prompt_pages, grid_pages)
        if len(self.finish_ghost) and self.finish_ghost.deepest_seen(hashes, prompt_pages):
            self.reused += 1
        branch = max(tree_branch_pages or 0, seen)
        return Ticket(branch_pages=branch if branch > usable_pages else tree_branch_pages,
                      hashes=hashes, seen_pages=seen)

    def admit(self, event: CheckpointEvent, ticket: Ticket, pages: int) -> bool:
        if _at_branch(ticket, pages):
            return True
        if event is not CheckpointEvent.FINISH:
            return False
        pays = self.finish_states_pay
        if ticket.hashes is not None and 0 < pages <= len(ticket.hashes):
            self.finish_ghost.add(ticket.hashes[pages - 1:pages])
            self.finishes += 1
            self.weight += 1
            if self.finishes % self.window == 0:
                self.weight, self.reused = self.weight / 2, self.reused / 2
        return pays
