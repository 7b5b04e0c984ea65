"""IdAllocator: ids 1..capacity handed out from a free stack; id 0 is reserved and never free.

One mechanism serves pages (NULL_PAGE = 0), state slots (NULL_SLOT = 0) and request rows
(row 0). Ids at or above the high-water mark ``fresh`` were never handed out and are free
without being listed; freed ids live in a numpy stack and are reused first (LIFO), which
keeps a working set of pages warm, like SGLang's allocators prepend released pages. So
`alloc(n)` and `free(ids)` cost a few vectorised numpy calls on the n ids however large the
capacity, and memory grows with the ids actually used (a 2^28-page pool that only ever
holds 20M pages costs 20M entries). A boolean `in_use` mask makes double frees and frees of
never-allocated ids fail loudly; repeats in one call are found with a scratch array of
positions (O(n), no sort).

    stack: [ freed ids ...... | ]     fresh ↓ (never handed out: fresh .. capacity)
    in_use[id]: True for handed-out ids; False for 0 (reserved) and past its end (sentinel)

Conservation law: free (stack + never handed out) + used + reserved (1) == capacity + 1.

>>> ids = IdAllocator(capacity=4, what="state slot")
>>> ids.alloc(3).tolist(), ids.num_free
([1, 2, 3], 1)
>>> ids.alloc(2) is None  # check-then-commit: nothing is taken when it does not fit
True
>>> ids.free([2]); ids.alloc(2).tolist()
[2, 4]
>>> ids.free_each([1, 3, 1, 3, 3]); ids.num_free  # repeats allowed: each id freed once
2
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kvledger.pools.errors import AllocatorError, IntegrityError

NULL_ID = 0  # the reserved padding id of every id space
NULL_SLOT = NULL_ID  # state slot 0: the padding slot of every MambaPool
_INITIAL_IDS = 1024  # arrays start this long and double as the high-water mark rises


class IdAllocator:
    """Ids 1..capacity; `alloc` returns ascending-at-start int64 arrays, or None when short."""

    def __init__(self, *, capacity: int, what: str) -> None:
        if capacity < 0:
            raise ValueError(f"{what} capacity must be ≥ 0, got {capacity}")
        self.capacity = capacity
        self.what = what
        self._fresh = 1  # the lowest id never handed out
        size = min(capacity, _INITIAL_IDS)
        self._stack = np.empty(size, dtype=np.int64)  # freed ids; the top is the end
        self._top = 0
        # in_use[0] (the reserved id) and its last entry (a sentinel past the high-water mark)
        # are never True, so a clipped lookup answers "not allocated" for any id outside
        # 1..fresh−1 in one call.
        self._in_use = np.zeros(size + 2, dtype=bool)
        self._position = np.zeros(0, dtype=np.int32)  # scratch for finding repeats

    @property
    def num_free(self) -> int:
        return self._top + self.capacity + 1 - self._fresh

    @property
    def fresh_id(self) -> int:
        """The lowest id never handed out: every id handed out so far is below it."""
        return self._fresh

    @property
    def num_used(self) -> int:
        return self.capacity - self.num_free

    def can_alloc(self, n: int) -> bool:
        return 0 <= n <= self.num_free

    def alloc(self, n: int) -> np.ndarray | None:
        """n ids, or None (and no change) when fewer than n are free."""
        if n < 0:
            raise ValueError(f"cannot allocate {n} {self.what}s")
        if n > self.num_free:
            return None
        reused = min(n, self._top)
        ids = self._stack[self._top - reused : self._top][::-1]
        self._top -= reused
        if n > reused:
            start = self._fresh
            self._fresh += n - reused
            self._grow(self._fresh + 1)
            ids = np.concatenate((ids, np.arange(start, self._fresh, dtype=np.int64)))
        else:
            ids = ids.copy()
        self._in_use[ids] = True
        return ids

    def free(self, ids: np.ndarray | Sequence[int]) -> None:
        """Return ids; any id that is reserved, out of range, repeated or not allocated raises."""
        arr = np.asarray(ids, dtype=np.int64).reshape(-1)
        self._check_held(arr)
        if arr.size > 1 and not self._first_of_each(arr).all():
            raise AllocatorError(f"{self.what}s freed twice in one call: {arr.tolist()}")
        self._release(arr)

    def free_each(self, ids: np.ndarray | Sequence[int]) -> None:
        """Free every distinct id listed, once, however often it repeats (all must be held)."""
        arr = np.asarray(ids, dtype=np.int64).reshape(-1)
        self._check_held(arr)
        if arr.size > 1:
            arr = arr[self._first_of_each(arr)]
        self._release(arr)

    def free_unique(self, arr: np.ndarray) -> None:
        """`free` for an int64 array the caller built without repeats."""
        self._check_held(arr)
        self._release(arr)

    def allocated(self) -> np.ndarray:
        """Every id handed out and not yet freed, ascending."""
        return np.flatnonzero(self._in_use)

    def is_allocated(self, ids: np.ndarray) -> np.ndarray:
        """Vectorised membership: True where the id is handed out (False out of range)."""
        return np.take(self._in_use, ids, mode="clip")

    def check_integrity(self) -> None:
        """free + used + reserved == capacity + 1; the free stack and the in-use mask disjoint
        and together exactly 1..fresh−1; nothing at or past the high-water mark in use."""
        fresh = self._fresh
        used = int(np.count_nonzero(self._in_use))
        if self._in_use[NULL_ID] or self._in_use[-1] or self._in_use[fresh:].any():
            raise IntegrityError(f"reserved {self.what} {NULL_ID}, the sentinel or an id never "
                                 "handed out is marked in use")
        if self.num_free + used + 1 != self.capacity + 1 or not 1 <= fresh <= self.capacity + 1:
            raise IntegrityError(
                f"{self.what}s: free {self.num_free} + used {used} + reserved 1 "
                f"!= capacity {self.capacity} + 1"
            )
        free = self._stack[: self._top]
        if free.size and (int(free.min()) <= NULL_ID or int(free.max()) >= fresh):
            raise IntegrityError(f"free {self.what} stack holds an id outside 1..{fresh - 1}")
        # The free stack must be exactly the ids below the mark not in use: O(fresh), no sort.
        listed = np.zeros(fresh, dtype=bool)
        listed[free] = True
        if int(np.count_nonzero(listed)) != free.size:
            raise IntegrityError(f"free {self.what} stack holds an id twice")
        if not np.array_equal(listed[1:], ~self._in_use[1:fresh]):
            raise IntegrityError(f"a {self.what} is both free and in use, or neither")

    # ---- internals -------------------------------------------------------------------------

    def _check_held(self, arr: np.ndarray) -> None:
        if arr.size == 0:
            return
        held = self.is_allocated(arr)
        if held.all():
            return
        bad = int(arr[~held][0])
        if bad == NULL_ID:
            raise AllocatorError(f"free of the reserved {self.what} {NULL_ID}")
        if not 0 < bad <= self.capacity:
            raise AllocatorError(
                f"free of out-of-range {self.what} {bad} (valid 1..{self.capacity})")
        raise AllocatorError(
            f"free of {self.what} {bad} that is not allocated (double free, or never handed out)"
        )

    def _first_of_each(self, arr: np.ndarray) -> np.ndarray:
        """A mask with exactly one True per distinct id of ``arr`` (all held, so all < fresh):
        each id's slot of the scratch keeps one writer's position, and only that writer
        reads its own position back."""
        if self._position.size < self._in_use.size:
            self._position = np.zeros(self._in_use.size, dtype=np.int32)
        # int32 positions halve the scattered memory traffic; one call frees < 2^31 ids.
        order = np.arange(arr.size, dtype=np.int32)
        self._position[arr] = order
        return self._position[arr] == order

    def _release(self, arr: np.ndarray) -> None:
        if arr.size == 0:
            return
        self._in_use[arr] = False
        top = self._top + arr.size
        if top > self._stack.size:
            grown = np.empty(max(top, 2 * self._stack.size), dtype=np.int64)
            grown[: self._top] = self._stack[: self._top]
            self._stack = grown
        self._stack[self._top : top] = arr
        self._top = top

    def _grow(self, ids_needed: int) -> None:
        """Make in_use index every id below ``ids_needed`` and keep a sentinel past them."""
        if ids_needed + 1 <= self._in_use.size:
            return
        size = min(self.capacity + 2, max(ids_needed + 1, 2 * self._in_use.size))
        grown = np.zeros(size, dtype=bool)
        grown[: self._in_use.size - 1] = self._in_use[:-1]
        self._in_use = grown


class StateSlotAllocator(IdAllocator):
    """State slots 1..num_slots of a MambaPool with num_slots + 1 slots; slot 0 is NULL_SLOT.

    >>> slots = StateSlotAllocator(num_slots=343)
    >>> slots.alloc(5).tolist(), slots.num_free
    ([1, 2, 3, 4, 5], 338)
    """

    def __init__(self, *, num_slots: int) -> None:
        super().__init__(capacity=num_slots, what="state slot")
