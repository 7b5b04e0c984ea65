"""IdAllocator: ids 1..capacity handed out from a free stack; id 0 is reserved and never free.

One mechanism serves pages (NULL_PAGE = 0), state slots (NULL_SLOT = 0) and request rows
(row 0). The free ids live in a numpy stack, so `alloc(n)` and `free(ids)` cost a few
vectorised numpy calls however large n is; a boolean `in_use` mask makes double frees and
frees of never-allocated ids fail loudly. Freed ids are reused first (LIFO), which keeps a
working set of pages warm, like SGLang's allocators prepend released pages.

    stack: [ free ids ............ | (unused) ]      in_use[id]: True for handed-out ids
             0                 top ↑                  in_use[0] is False forever (reserved)

Conservation law: free + used + reserved (1) == capacity + 1.

>>> ids = IdAllocator(capacity=4, what="state slot")
>>> ids.alloc(3).tolist(), ids.num_free
([1, 2, 3], 1)
>>> ids.alloc(2) is None  # check-then-commit: nothing is taken when it does not fit
True
>>> ids.free([2]); ids.alloc(2).tolist()
[2, 4]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kvledger.pools.errors import AllocatorError, IntegrityError

NULL_ID = 0  # the reserved padding id of every id space
NULL_SLOT = NULL_ID  # state slot 0: the padding slot of every MambaPool


class IdAllocator:
    """Ids 1..capacity; `alloc` returns ascending-at-start int64 arrays, or None when short."""

    def __init__(self, *, capacity: int, what: str) -> None:
        if capacity < 0:
            raise ValueError(f"{what} capacity must be ≥ 0, got {capacity}")
        self.capacity = capacity
        self.what = what
        # Top of the stack is the end; reversed so the first allocation returns 1, 2, 3, …
        self._stack = np.arange(capacity, 0, -1, dtype=np.int64)
        self._top = capacity
        # in_use[0] (the reserved id) and in_use[capacity + 1] (a sentinel) are never True, so
        # a clipped lookup answers "not allocated" for any out-of-range id in one call.
        self._in_use = np.zeros(capacity + 2, dtype=bool)

    @property
    def num_free(self) -> int:
        return self._top

    @property
    def num_used(self) -> int:
        return self.capacity - self._top

    def can_alloc(self, n: int) -> bool:
        return 0 <= n <= self._top

    def alloc(self, n: int) -> np.ndarray | None:
        """n ids, or None (and no change) when fewer than n are free."""
        if n < 0:
            raise ValueError(f"cannot allocate {n} {self.what}s")
        if n > self._top:
            return None
        if n == 0:
            return np.empty(0, dtype=np.int64)
        ids = self._stack[self._top - n : self._top][::-1].copy()
        self._top -= n
        self._in_use[ids] = True
        return ids

    def free(self, ids: np.ndarray | Sequence[int]) -> None:
        """Return ids; any id that is reserved, out of range, repeated or not allocated raises."""
        arr = np.asarray(ids, dtype=np.int64).reshape(-1)
        if arr.size > 1 and np.unique(arr).size != arr.size:
            raise AllocatorError(f"{self.what}s freed twice in one call: {arr.tolist()}")
        self.free_unique(arr)

    def free_unique(self, arr: np.ndarray) -> None:
        """`free` for an int64 array the caller built without repeats (e.g. by np.unique)."""
        if arr.size == 0:
            return
        held = self.is_allocated(arr)
        if not held.all():
            bad = int(arr[~held][0])
            if bad == NULL_ID:
                raise AllocatorError(f"free of the reserved {self.what} {NULL_ID}")
            if not 0 < bad <= self.capacity:
                raise AllocatorError(
                    f"free of out-of-range {self.what} {bad} (valid 1..{self.capacity})")
            raise AllocatorError(
                f"free of {self.what} {bad} that is not allocated (double free, or never handed out)"
            )
        self._in_use[arr] = False
        self._stack[self._top : self._top + arr.size] = arr
        self._top += arr.size

    def allocated(self) -> np.ndarray:
        """Every id handed out and not yet freed, ascending."""
        return np.flatnonzero(self._in_use)

    def is_allocated(self, ids: np.ndarray) -> np.ndarray:
        """Vectorised membership: True where the id is handed out (False out of range)."""
        return np.take(self._in_use, ids, mode="clip")

    def check_integrity(self) -> None:
        """free + used + reserved == capacity + 1, the free stack and the in-use mask disjoint."""
        used = int(np.count_nonzero(self._in_use))
        if self._in_use[NULL_ID] or self._in_use[-1]:
            raise IntegrityError(f"reserved {self.what} {NULL_ID} or the sentinel is marked in use")
        if self._top + used + 1 != self.capacity + 1:
            raise IntegrityError(
                f"{self.what}s: free {self._top} + used {used} + reserved 1 "
                f"!= capacity {self.capacity} + 1"
            )
        free = self._stack[: self._top]
        if free.size and (int(free.min()) <= NULL_ID or int(free.max()) > self.capacity):
            raise IntegrityError(f"free {self.what} stack holds an id outside 1..{self.capacity}")
        # The free stack must be exactly the ids not in use: O(capacity), no sort.
        listed = np.zeros(self.capacity + 1, dtype=bool)
        listed[free] = True
        if int(np.count_nonzero(listed)) != free.size:
            raise IntegrityError(f"free {self.what} stack holds an id twice")
        if not np.array_equal(listed[1:], ~self._in_use[1:-1]):
            raise IntegrityError(f"a {self.what} is both free and in use, or neither")


class StateSlotAllocator(IdAllocator):
    """State slots 1..num_slots of a MambaPool with num_slots + 1 slots; slot 0 is NULL_SLOT.

    >>> slots = StateSlotAllocator(num_slots=343)
    >>> slots.alloc(5).tolist(), slots.num_free
    ([1, 2, 3, 4, 5], 338)
    """

    def __init__(self, *, num_slots: int) -> None:
        super().__init__(capacity=num_slots, what="state slot")
