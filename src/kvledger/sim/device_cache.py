"""Where the simulator's allocators, the prefix tree and the host tier meet (accounting mode).

The tree runs over page keys (`kvledger.sim.pages`) with a tree page of one key, so every
tree length is in pages and every FULL value is one page index per key. States are saved on
the grid `lcm(linear chunk, page)` tokens, which is `grid_pages` keys.

Pools own indices; the tree only holds them: `insert` hands back duplicates to free, and
eviction goes through the host tier (`kvledger.sim.host_port`), which frees what it drops.
Allocation is check-then-commit: `alloc_pages(n)` evicts unlocked cache entries only if that
can succeed, else returns None.

>>> from kvledger.sim.host_port import NoHostTier
>>> cache = DeviceCache(num_pages=8, num_slots=4, grid_pages=1, host=NoHostTier)
>>> keys = np.array([10, 11, 12])
>>> pages, slot = cache.alloc_pages(3), cache.alloc_slots(1)
>>> _ = cache.insert(keys, pages, int(slot[0]))
>>> cache.available_pages, cache.alloc_pages(8) is not None, cache.evicted_pages
(8, True, 3)
>>> cache.check_integrity(held_pages=np.arange(1, 9), held_slots=np.zeros(0, dtype=np.int64))
"""

from __future__ import annotations

import numpy as np

from kvledger.pools.ids import StateSlotAllocator
from kvledger.pools.paged import PagedTokenAllocator
from kvledger.sim.host_port import HostTierFactory
from kvledger.tree.node import Node
from kvledger.tree.radix import RadixTree
from kvledger.tree.results import InsertResult, MatchResult


class DeviceCache:
    def __init__(self, *, num_pages: int, num_slots: int, grid_pages: int,
                 host: HostTierFactory) -> None:
        self.tree = RadixTree(page_size=1, mamba_chunk_tokens=grid_pages)
        # A page of one key: the paged allocator's "token slots" are page ids, which is what
        # the host tier's device side frees and allocates through.
        self.page_allocator = PagedTokenAllocator(num_pages=num_pages, page_tokens=1)
        self.pages = self.page_allocator.pages
        self.slots = StateSlotAllocator(num_slots=num_slots)
        self.host = host(self.tree, self.page_allocator, self.slots)

    @property
    def available_pages(self) -> int:
        """Free pages plus pages eviction could free (unlocked cache entries)."""
        return self.pages.num_free + self.tree.sizes().full_evictable_tokens

    @property
    def available_slots(self) -> int:
        return self.slots.num_free + self.tree.sizes().mamba_evictable_slots

    @property
    def evicted_pages(self) -> int:
        """FULL KV pages dropped from device by eviction (a backed-up one stays on host)."""
        return self.host.device_evictions().pages

    @property
    def evicted_slots(self) -> int:
        return self.host.device_evictions().slots

    def match(self, keys: np.ndarray) -> MatchResult:
        return self.tree.match_prefix(keys)

    def loadback(self, match: MatchResult) -> MatchResult:
        """The host part of `match` back on device when there is room; the match after."""
        return self.host.loadback(match)

    def reuse(self, node: Node) -> None:
        """An admitted request takes the cached prefix ending at `node` (write policies)."""
        self.host.after_hit(node)

    def alloc_pages(self, count: int) -> np.ndarray | None:
        if count > self.available_pages:
            return None
        if count > self.pages.num_free:
            self.host.evict_device(full_pages=count - self.pages.num_free, mamba_slots=0)
        got = self.pages.alloc(count)
        assert got is not None, "eviction freed less than the tree reported evictable"
        return got

    def alloc_slots(self, count: int) -> np.ndarray | None:
        if count > self.available_slots:
            return None
        if count > self.slots.num_free:
            self.host.evict_device(full_pages=0, mamba_slots=count - self.slots.num_free)
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
        self.host.after_insert(result)
        return result

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
        """Tree and host-tier invariants, then conservation: free + tree + requests' own ==
        capacity, for device pages and for state slots, each index exactly once."""
        self.tree.check_integrity()
        self.host.check_integrity()
        tree_pages, tree_slots = self.tree_indices()
        for what, allocator, claimed in (("token pages", self.pages, (tree_pages, held_pages)),
                                         ("state slots", self.slots, (tree_slots, held_slots))):
            allocator.check_integrity()
            claimed_ids = np.sort(np.concatenate(claimed))
            if not np.array_equal(claimed_ids, allocator.allocated()):
                raise RuntimeError(
                    f"{what}: the tree and the running requests claim {claimed_ids.size} ids, "
                    f"the allocator has {allocator.num_used} in use (an id held twice, leaked, "
                    "or freed while held)"
                )
