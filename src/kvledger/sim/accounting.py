"""Accounting-only allocators: indices with no memory behind them (no torch).

The simulator needs the same bookkeeping as the device pools — which page and which state slot
is free, used or reserved — without the bytes. Index 0 is the null page / null slot, handed
out never (SGLang writes padded tokens there), so usable indices are 1..capacity.

Check-then-commit: `alloc(n)` returns None when fewer than n are free and changes nothing.
Freeing an index twice is caught by `check_integrity`, which the replay runs against every
index the tree and the running requests claim.

Why not `kvledger.pools.ids.IdAllocator`, the same stack with an in-use mask: importing
anything from `kvledger.pools` loads torch (its package builds tensor pools), which would
multiply the simulator's start-up time; the replay needs none of it.

>>> pages = IndexAllocator(capacity=4, what="page")
>>> got = pages.alloc(3)
>>> got.tolist(), pages.num_free, pages.alloc(2) is None
([1, 2, 3], 1, True)
>>> pages.free(got[:2]); pages.num_free, pages.num_used
(3, 1)
>>> pages.check_integrity()
"""

from __future__ import annotations

import numpy as np

NULL_INDEX = 0  # the null page / null slot: reserved, never free, never used


class IndexAllocator:
    """A LIFO free stack over indices 1..capacity, held in one numpy array."""

    def __init__(self, *, capacity: int, what: str) -> None:
        if capacity < 0:
            raise ValueError(f"{what} capacity: expected ≥ 0, got {capacity}")
        self.capacity = capacity
        self.what = what
        # Highest index on the bottom so the first allocations are 1, 2, 3, …
        self._stack = np.arange(capacity, 0, -1, dtype=np.int64)
        self._top = capacity  # _stack[:_top] are free

    @property
    def num_free(self) -> int:
        return self._top

    @property
    def num_used(self) -> int:
        return self.capacity - self._top

    def alloc(self, count: int) -> np.ndarray | None:
        assert count >= 0, f"{self.what}: alloc({count})"
        if count > self._top:
            return None
        self._top -= count
        return self._stack[self._top : self._top + count][::-1].copy()

    def free(self, indices: np.ndarray) -> None:
        count = len(indices)
        if not count:
            return
        assert self._top + count <= self.capacity, f"{self.what}: freeing more than was used"
        assert int(indices.min()) > NULL_INDEX and int(indices.max()) <= self.capacity, (
            f"{self.what}: freeing an index outside 1..{self.capacity}"
        )
        self._stack[self._top : self._top + count] = indices[::-1]
        self._top += count

    def free_indices(self) -> np.ndarray:
        return self._stack[: self._top].copy()

    def check_integrity(self, used: np.ndarray | None = None) -> None:
        """The free indices are distinct and within 1..capacity; given every index its holders
        claim (`used`), free + used is exactly 1..capacity (the null index is in neither)."""
        free = self._stack[: self._top]
        if len(np.unique(free)) != len(free):
            raise RuntimeError(f"{self.what} allocator: an index is free twice")
        if len(free) and (free.min() <= NULL_INDEX or free.max() > self.capacity):
            raise RuntimeError(f"{self.what} allocator: a free index outside 1..{self.capacity}")
        if used is None:
            return
        if len(used) != self.num_used:
            raise RuntimeError(f"{self.what} allocator: holders claim {len(used)} indices, "
                               f"{self.num_used} are handed out")
        everything = np.sort(np.concatenate([free, used]))
        if not np.array_equal(everything, np.arange(1, self.capacity + 1)):
            raise RuntimeError(f"{self.what} allocator: free + used is not 1..{self.capacity}: "
                               "an index is lost or held twice")
