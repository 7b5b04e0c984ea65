"""Adoption: a prefix the store tier read enters the device as a request's prefix would.

`HybridCache.adopt_restored` is the store tier's one way in (`kvledger.cache.l3_tier`): the
restored pages continue the request's device hit, so that hit's last node stays locked
while fresh pages and a state slot are taken (evicting LRU entries if needed), filled by the
tier's `write`, and inserted into the tree with the host tier's insert hook. Check-then-
commit: `can_adopt` first; nothing changes when it says no.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from kvledger.tree import MatchResult

if TYPE_CHECKING:
    from kvledger.cache.hybrid import HybridCache


def adopt_restored(cache: HybridCache, match: MatchResult, keys: np.ndarray, num_pages: int,
                   write: Callable[[np.ndarray, int], None]) -> bool:

    tree, last = cache.tree, match.last_device_node
    guard = None if last.parent is None else tree.lock(last)
    try:
        if not cache.can_adopt(num_pages):
            return False
        short = num_pages - cache.rows.num_free_pages
        if short > 0:
            cache.evict(full_units=short * cache.units_per_page)
        slots = cache.alloc_slots(1)
        assert slots is not None, "a state slot vanished between check and commit"
        locs = cache.rows.allocator.alloc(num_pages * cache.units_per_page)
        if locs is None:
            cache.states.free(slots)
            raise RuntimeError("store restore: no pages after eviction although it fit")
        try:
            write(locs, slots[0])
        except BaseException:
            cache.rows.free_values(locs)
            cache.states.free(slots)
            raise
        full = np.concatenate([np.asarray(match.device_indices, dtype=np.int64), locs])
        result = tree.insert(keys, full, slots[0])
        cache.rows.free_values(result.duplicate_indices)
        if result.mamba_existed:
            cache.states.free(slots)
        cache.tier.on_insert(result)
    finally:
        if guard is not None:
            tree.unlock(guard)
    return True
