"""HostUnits: host pages (or host state slots) 0..capacity−1, all usable.

Unlike device pools there is no padding unit on host: nothing ever writes a dummy row to
DRAM, so SGLang's host pools hand out every slot (pool_host/base.py `clear`: free_slots =
arange(size)). The bookkeeping is the device's IdAllocator over ids 1..capacity, shifted down
by one, so double frees and frees of units never handed out fail the same loud way.

Conservation law: free + used == capacity.

>>> units = HostUnits(capacity=3, what="host page")
>>> units.alloc(2).tolist(), units.alloc(2), units.num_free
([0, 1], None, 1)
>>> units.free([0]); units.alloc(2).tolist()
[0, 2]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kvledger.pools.errors import IntegrityError
from kvledger.pools.ids import IdAllocator


class HostUnits:
    def __init__(self, *, capacity: int, what: str) -> None:
        self._ids = IdAllocator(capacity=capacity, what=what)
        self.what = what

    @property
    def capacity(self) -> int:
        return self._ids.capacity

    @property
    def num_free(self) -> int:
        return self._ids.num_free

    @property
    def num_used(self) -> int:
        return self._ids.num_used

    def alloc(self, n: int) -> np.ndarray | None:
        """n units, or None (and no change) when fewer are free."""
        ids = self._ids.alloc(n)
        return None if ids is None else ids - 1

    def free(self, units: np.ndarray | Sequence[int]) -> None:
        self._ids.free(np.asarray(units, dtype=np.int64).reshape(-1) + 1)

    def is_allocated(self, units: np.ndarray) -> np.ndarray:
        return self._ids.is_allocated(np.asarray(units, dtype=np.int64) + 1)

    def check_integrity(self) -> None:
        self._ids.check_integrity()
        if self.num_free + self.num_used != self.capacity:
            raise IntegrityError(f"{self.what}s: free {self.num_free} + used {self.num_used} "
                                 f"!= capacity {self.capacity}")
