"""Where the simulator's allocators, the prefix tree and the host tier meet (accounting mode).

The tree runs over page keys (`kvledger.sim.pages`) with a tree page of one key, so every
tree length is in pages and every FULL value is one page index per key. States are saved on
the grid `lcm(linear chunk, page)` tokens, which is `grid_pages` keys.

Pools own indices; the tree only holds them: `insert` hands back duplicates to free and
eviction returns what it dropped, and this facade frees both. Allocation is check-then-commit:
`alloc_pages(n)` evicts unlocked cache entries only if that can succeed, else returns None.

>>> from kvledger.sim.host_port import NoHostTier
>>> cache = DeviceCache(num_pages=8, num_slots=4, grid_pages=1, host=NoHostTier())
>>> keys = np.array([10, 11, 12])
>>> pages, slot = cache.alloc_pages(3), cache.alloc_slots(1)
>>> _ = cache.insert(keys, pages, int(slot[0]))
>>> cache.available_pages, cache.alloc_pages(8) is not None, cache.evicted_pages
(8, True, 3)
>>> cache.check_integrity(held_pages=np.arange(1, 9), held_slots=np.zeros(0, dtype=np.int64))
"""

from __future__ import annotations

import numpy as np

from kvledger.pools.ids import IdAllocator
from kvledger.sim.host_port import HostTier
from kvledger.tree.radix import RadixTree
from kvledger.tree.results import InsertResult, MatchResult


class DeviceCache:
    def __init__(self, *, num_pages: int, num_slots: int, grid_pages: int, host: HostTier) -> None:
        self.tree = RadixTree(page_size=1, mamba_chunk_tokens=grid_pages)
        self.pages = IdAllocator(capacity=num_pages, what="token page")
        self.slots = IdAllocator(capacity=num_slots, what="state slot")
        self.host = host
        self.evicted_pages = 0  # FULL KV pages dropped from device by eviction
        self.evicted_slots = 0  # MAMBA states dropped from device by eviction

    @property
    def available_pages(self) -> int:
        """Free pages plus pages eviction could free (unlocked cache entries)."""
        return self.pages.num_free + self.tree.sizes().full_evictable_tokens

    @property
    def available_slots(self) -> int:
        return self.slots.num_free + self.tree.sizes().mamba_evictable_slots

    def match(self, keys: np.ndarray) -> MatchResult:
        return self.host.loadback(self.tree, self.tree.match_prefix(keys), self.alloc_pages)

    def alloc_pages(self, count: int) -> np.ndarray | None:
        if count > self.available_pages:
            return None
        if count > self.pages.num_free:
            self._evict(full_pages=count - self.pages.num_free, mamba_slots=0)
        got = self.pages.alloc(count)
        assert got is not None, "eviction freed less than the tree reported evictable"
        return got

    def alloc_slots(self, count: int) -> np.ndarray | None:
        if count > self.available_slots:
            return None
        if count > self.slots.num_free:
            self._evict(full_pages=0, mamba_slots=count - self.slots.num_free)
        got = self.slots.alloc(count)
        assert got is not None, "eviction freed fewer states than the tree reported evictable"
        return got

    def free_pages(self, pages: np.ndarray) -> None:
        self.pages.free(pages)

    def free_slots(self, slots: np.ndarray) -> None:
        self.slots.free(slots)

    def insert(self, keys: np.ndarray, pages: np.ndarray, slot: int) -> InsertResult:
        """Cache `keys` with their pages and the state after them; frees what the tree had."""
        result = self.tree.insert(keys, pages, slot)
        self.pages.free(result.duplicate_indices)
        if result.mamba_existed:
            self.slots.free(np.array([slot], dtype=np.int64))
        self.host.after_insert(self.tree, result.node)
        return result

    def _evict(self, *, full_pages: int, mamba_slots: int) -> None:
        result = self.host.evict_device(self.tree, full_pages=full_pages, mamba_slots=mamba_slots)
        self.pages.free(result.full_indices)
        self.slots.free(result.mamba_slots)
        self.evicted_pages += result.num_full_tokens
        self.evicted_slots += result.num_mamba_slots

    def tree_indices(self) -> tuple[np.ndarray, np.ndarray]:
        """Every device page and state slot the tree holds (a full walk; for checks)."""
        pages: list[np.ndarray] = []
        slots: list[int] = []
        stack = list(self.tree.root.children.values())
        while stack:
            node = stack.pop()
            if node.full.value is not None:
                pages.append(node.full.value)
            if node.mamba.value is not None:
                slots.append(node.mamba.value)
            stack.extend(node.children.values())
        empty = np.zeros(0, dtype=np.int64)
        return (np.concatenate(pages) if pages else empty), np.array(slots, dtype=np.int64)

    def check_integrity(self, *, held_pages: np.ndarray, held_slots: np.ndarray) -> None:
        """Tree invariants, then conservation: free + tree + requests' own == capacity, for
        pages and for state slots, each index exactly once."""
        self.tree.check_integrity()
        tree_pages, tree_slots = self.tree_indices()
        for allocator, claimed in ((self.pages, (tree_pages, held_pages)),
                                   (self.slots, (tree_slots, held_slots))):
            allocator.check_integrity()
            claimed_ids = np.sort(np.concatenate(claimed))
            if not np.array_equal(claimed_ids, allocator.allocated()):
                raise RuntimeError(
                    f"{allocator.what}s: the tree and the running requests claim "
                    f"{claimed_ids.size} ids, the allocator has {allocator.num_used} in use "
                    "(an id held twice, leaked, or freed while held)"
                )
