"""Segment-branch admission: save the state where the prompt's shared segment ends.

A later request branches from an earlier one where their shared prefix ends. Traces and
applications share whole segments: Mooncake's traces name prompts by 512-token blocks (a
later turn shares every whole block of the turn before and differs from its last, partial
block on), a chat template repeats whole messages. The state worth a slot is therefore
the one at the prompt's last segment boundary, not the engine's (the last page-grid point
of the chunk, a few tokens past that boundary and never matched again).

The segment is learned: every ticket whose prompt an earlier request shared (the ghost
table's depth `seen_pages`, as in ghost-branch) votes for each granularity g = grid · 2^k
(k ≤ `MAX_SHIFT`) that divides that depth. The segment is the coarsest g that at least
`agreement` of the votes support (with fewer than `min_votes` votes, the grid itself).

Segment ends are saved only while they pay, as ghost-branch's finish states: every
prompt's segment end is remembered in a ghost table whether or not its state was saved,
and the first later prompt that extends one counts as its reuse (once per segment end); while the reuse rate (decaying by
half every `window` segment ends) is below `segment_reuse_rate` the policy is ghost-branch
exactly. A trace of conversations extends about a quarter of its segment ends; one of
independent prompts over shared documents, a few per cent.

A request asks the cache to track two points in prefill, shallowest first: the ghost-table
branch point (a shared prefix the tree lost, as in ghost-branch) and then the segment end.
The cache tracks one state per chunk, so where both fall in one chunk the deeper, the
segment end, is the one saved. Finish states follow ghost-branch's rule (cached while later
prompts extend finished sequences often enough). Chunk ends that are neither are declined.

>>> policy = SegmentBranchAdmission(64, min_votes=2)
>>> keys = np.arange(40)
>>> for depth in (8, 16, 24):                     # branches seen at multiples of 8 pages
...     policy.vote(depth, grid_pages=1)
>>> policy.segment_pages(grid_pages=1)
8
>>> t = policy.ticket(keys=keys, prompt_pages=37, usable_pages=0, tree_branch_pages=None,
...                   grid_pages=1)
>>> t.branch_pages                                # 37 pages → the boundary at 32
32
"""

from __future__ import annotations

import numpy as np

from kvledger.cache.policies.admission import CheckpointEvent, GhostBranchAdmission, Ticket
from kvledger.cache.policies.ghost import GhostTable

MAX_SHIFT = 6  # up to 64 grid points per segment: 4,096 tokens at a 64-token grid


class SegmentBranchAdmission(GhostBranchAdmission):
    name = "segment-branch"

    def __init__(self, capacity: int, *, agreement: float = 0.9, min_votes: int = 32,
                 segment_reuse_rate: float = 0.2, finish_reuse_rate: float = 0.25,
                 window: int = 64) -> None:
        super().__init__(capacity, finish_reuse_rate=finish_reuse_rate, window=window)
        self.agreement = agreement
        self.min_votes = min_votes
        self.segment_reuse_rate = segment_reuse_rate
        self.segment_ghost = GhostTable(capacity)  # every prompt's segment end, saved or not
        self.segment_counted = GhostTable(capacity)  # ... and those a later prompt extended
        self.segments = 0  # segment ends recorded
        self.segment_weight = 0.0  # decayed segment ends
        self.segment_reused = 0.0  # decayed prompts that extended one
        self.votes = 0  # tickets with a branch seen before
        self.divides = [0] * (MAX_SHIFT + 1)  # per k: votes whose depth grid · 2^k divides

    def vote(self, seen_pages: int, *, grid_pages: int) -> None:
        if seen_pages <= 0:
            return
        self.votes += 1
        for k in range(MAX_SHIFT + 1):
            if seen_pages % (grid_pages << k):
                break
            self.divides[k] += 1

    @property
    def segment_ends_pay(self) -> bool:
        if self.segments < self.window:
            return True
        return self.segment_reused >= self.segment_reuse_rate * self.segment_weight

    def _record_segment_end(self, hashes: np.ndarray, prompt_pages: int, end: int) -> None:
        depth = self.segment_ghost.deepest_seen(hashes, prompt_pages) if len(
            self.segment_ghost) else 0
        if depth and not self.segment_counted.seen(int(hashes[depth - 1])):
            # each segment end counts once: one many prompts extend is a junction, which
            # ghost-branch's branch points already serve
            self.segment_reused += 1
            self.segment_counted.add(hashes[depth - 1:depth])
        if 0 < end <= len(hashes):
            self.segment_ghost.add(hashes[end - 1:end])
            self.segments += 1
            self.segment_weight += 1
            if self.segments % self.window == 0:
                self.segment_weight /= 2
                self.segment_reused /= 2

    def segment_pages(self, *, grid_pages: int) -> int:
        if self.votes < self.min_votes:
            return grid_pages
        k = max((k for k in range(MAX_SHIFT + 1)
                 if self.divides[k] >= self.agreement * self.votes), default=0)
        return grid_pages << k

    def ticket(self, *, keys: np.ndarray, prompt_pages: int, usable_pages: int,
               tree_branch_pages: int | None, grid_pages: int,
               hashes: np.ndarray | None = None) -> Ticket:
        ghost = super().ticket(keys=keys, prompt_pages=prompt_pages, usable_pages=usable_pages,
                               tree_branch_pages=tree_branch_pages, grid_pages=grid_pages,
                               hashes=hashes)
        self.vote(ghost.seen_pages, grid_pages=grid_pages)
        segment = self.segment_pages(grid_pages=grid_pages)
        end = prompt_pages // segment * segment
        pays = self.segment_ends_pay
        self._record_segment_end(ghost.hashes, prompt_pages, end)
        if not pays:
            return ghost
        branch = ghost.branch_pages
        if branch is None or branch <= usable_pages or branch >= end:
            branch, then = (end, None) if end > usable_pages else (branch, None)
        else:
            then = end
        return Ticket(branch_pages=branch, then_pages=then, hashes=ghost.hashes,
                      seen_pages=ghost.seen_pages, segment_pages=end)

    def admit(self, event: CheckpointEvent, ticket: Ticket, pages: int) -> bool:
        if event is not CheckpointEvent.FINISH and pages in (ticket.segment_pages,
                                                             ticket.then_pages):
            return True
        return super().admit(event, ticket, pages)

