"""DeviceCache: allocators, tree and eviction together; conservation after every operation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kvledger.sim.device_cache import DeviceCache
from kvledger.sim.host_port import NoHostTier

EMPTY = np.zeros(0, dtype=np.int64)


def test_alloc_evicts_only_what_is_unlocked():
    cache = DeviceCache(num_pages=6, num_slots=3, grid_pages=1, host=NoHostTier)
    pages, slot = cache.alloc_pages(4), cache.alloc_slots(1)
    cache.insert(np.array([1, 2, 3, 4]), pages, int(slot[0]))
    receipt = cache.tree.lock(cache.match(np.array([1, 2, 3, 4])).last_device_node)
    assert cache.available_pages == 2 and cache.alloc_pages(3) is None  # 4 pinned
    cache.tree.unlock(receipt)
    got = cache.alloc_pages(6)
    assert got is not None and (cache.evicted_pages, cache.evicted_slots) == (4, 1)
    cache.check_integrity(held_pages=got, held_slots=EMPTY)


def test_insert_frees_duplicates_and_a_second_state():
    cache = DeviceCache(num_pages=8, num_slots=4, grid_pages=1, host=NoHostTier)
    keys = np.array([7, 8, 9])
    first, second = cache.alloc_pages(3), cache.alloc_pages(3)
    a, b = (int(s) for s in cache.alloc_slots(2))
    cache.insert(keys, first, a)
    result = cache.insert(keys, second, b)
    assert result.mamba_existed and sorted(result.duplicate_indices.tolist()) == sorted(second.tolist())
    assert cache.pages.num_free == 5 and cache.slots.num_free == 3
    cache.check_integrity(held_pages=EMPTY, held_slots=EMPTY)


def test_integrity_catches_a_leaked_or_doubly_held_page():
    cache = DeviceCache(num_pages=4, num_slots=2, grid_pages=1, host=NoHostTier)
    got = cache.alloc_pages(2)
    with pytest.raises(RuntimeError, match="token pages"):
        cache.check_integrity(held_pages=got[:1], held_slots=EMPTY)  # one page leaked
    with pytest.raises(RuntimeError, match="token pages"):
        cache.check_integrity(held_pages=np.concatenate([got, got[:1]]), held_slots=EMPTY)
    cache.check_integrity(held_pages=got, held_slots=EMPTY)


class CacheMachine(RuleBasedStateMachine):
    """Requests' view of the cache: allocate, match and pin, cache a prefix, finish."""

    def __init__(self) -> None:
        super().__init__()
        self.cache = DeviceCache(num_pages=24, num_slots=6, grid_pages=1, host=NoHostTier)
        self.held_pages: list[np.ndarray] = []
        self.held_slots: list[int] = []
        self.receipts = []

    @rule(count=st.integers(1, 8))
    def allocate_pages(self, count):
        before = self.cache.available_pages
        got = self.cache.alloc_pages(count)
        assert (got is None) == (count > before)
        if got is not None:
            self.held_pages.append(got)

    @rule()
    def allocate_slot(self):
        got = self.cache.alloc_slots(1)
        if got is not None:
            self.held_slots.append(int(got[0]))

    @precondition(lambda self: self.held_pages and self.held_slots)
    @rule(prefix=st.lists(st.integers(0, 3), min_size=0, max_size=4))
    def cache_pages(self, prefix):
        pages = self.held_pages.pop()
        keys = np.array((prefix + list(range(10, 10 + len(pages))))[: len(pages)], dtype=np.int64)
        self.cache.insert(keys, pages, self.held_slots.pop())

    @rule(keys=st.lists(st.integers(0, 12), min_size=1, max_size=8))
    def match_and_pin(self, keys):
        match = self.cache.match(np.array(keys, dtype=np.int64))
        assert match.device_hit_length <= len(keys)
        if match.device_hit_length:
            self.receipts.append(self.cache.tree.lock(match.last_device_node))

    @precondition(lambda self: self.receipts)
    @rule()
    def unpin(self):
        self.cache.tree.unlock(self.receipts.pop(0))

    @precondition(lambda self: self.held_pages)
    @rule()
    def free_pages(self):
        self.cache.free_pages(self.held_pages.pop(0))

    @invariant()
    def conserved(self):
        held = np.concatenate(self.held_pages) if self.held_pages else EMPTY
        self.cache.check_integrity(held_pages=held,
                                   held_slots=np.array(self.held_slots, dtype=np.int64))


TestCacheMachine = CacheMachine.TestCase
TestCacheMachine.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)
