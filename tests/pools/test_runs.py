"""RunAllocator: a page pool handed out in runs; pages conserved, check-then-commit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from kvledger.pools.errors import AllocatorError, IntegrityError
from kvledger.pools.runs import RunAllocator


def test_runs_take_their_pages_and_give_them_back():
    pool = RunAllocator(capacity_pages=600)
    ids = pool.alloc(np.array([512, 40, 8]))
    assert ids.tolist() == [1, 2, 3] and pool.num_free_pages == 40
    assert pool.pages_of(ids[1:]) == 48
    assert pool.free(ids[[0, 2]]) == 520 and pool.num_free_pages == 560
    pool.check_integrity()


def test_a_run_too_long_for_the_free_pages_takes_nothing():
    pool = RunAllocator(capacity_pages=10)
    pool.alloc(np.array([6]))
    assert pool.alloc(np.array([2, 3])) is None
    assert pool.num_free_pages == 4 and pool.allocated().tolist() == [1]


def test_freeing_a_run_not_held_is_loud_and_changes_nothing():
    pool = RunAllocator(capacity_pages=10)
    ids = pool.alloc(np.array([3, 3]))
    pool.free(ids[:1])
    with pytest.raises(AllocatorError, match="not allocated"):
        pool.free(ids[:1])
    assert pool.num_free_pages == 7
    pool.check_integrity()


def test_an_empty_run_is_found_by_the_integrity_check():
    pool = RunAllocator(capacity_pages=10)
    pool.alloc(np.array([0, 2]))
    with pytest.raises(IntegrityError, match="holds 0 pages"):
        pool.check_integrity()


def test_ids_past_the_first_thousand_keep_their_run_lengths():
    pool = RunAllocator(capacity_pages=5000)
    ids = pool.alloc(np.arange(1, 3001) % 2 + 1)  # 3,000 runs of 2, 1, 2, ... pages
    assert pool.num_used_pages == 4500 and pool.pages_of(ids[-2:]) == 3
    pool.check_integrity()


class RunPool(RuleBasedStateMachine):
    """Random allocs and frees; the pages of held runs plus the free pages stay the
    capacity, checked after every step."""

    def __init__(self) -> None:
        super().__init__()
        self.pool = RunAllocator(capacity_pages=64)
        self.held: dict[int, int] = {}  # id -> pages

    @rule(pages=st.lists(st.integers(1, 20), max_size=5))
    def alloc(self, pages):
        ids = self.pool.alloc(np.array(pages, dtype=np.int64))
        fits = sum(pages) <= 64 - sum(self.held.values())
        assert (ids is not None) == fits
        if ids is not None:
            self.held.update(zip(ids.tolist(), pages, strict=True))

    @rule(data=st.data())
    def free(self, data):
        if not self.held:
            return
        chosen = data.draw(st.lists(st.sampled_from(sorted(self.held)), unique=True, min_size=1))
        assert self.pool.free(np.array(chosen, dtype=np.int64)) == sum(self.held.pop(i)
                                                                         for i in chosen)

    @invariant()
    def conserved(self):
        self.pool.check_integrity()
        assert self.pool.num_used_pages == sum(self.held.values())
        assert sorted(self.held) == self.pool.allocated().tolist()


TestRunPool = RunPool.TestCase
TestRunPool.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)
