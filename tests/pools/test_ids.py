"""IdAllocator / StateSlotAllocator: reserved id 0, check-then-commit, loud misuse."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kvledger.pools.errors import AllocatorError, IntegrityError
from kvledger.pools.ids import NULL_ID, IdAllocator, StateSlotAllocator


def test_fresh_allocator_hands_out_ascending_ids_and_never_the_null_id():
    slots = StateSlotAllocator(num_slots=5)
    assert slots.alloc(5).tolist() == [1, 2, 3, 4, 5]
    assert slots.num_free == 0 and slots.num_used == 5


def test_running_out_returns_none_and_takes_nothing():
    slots = StateSlotAllocator(num_slots=3)
    slots.alloc(2)
    assert slots.alloc(2) is None
    assert slots.num_free == 1
    slots.check_integrity()


def test_freed_ids_are_reused_first():
    ids = IdAllocator(capacity=6, what="row")
    ids.alloc(4)
    ids.free([2, 3])
    assert sorted(ids.alloc(2).tolist()) == [2, 3]


@pytest.mark.parametrize(
    ("ids", "message"),
    [([0], "reserved"), ([7], "out-of-range"), ([4], "not allocated"), ([1, 1], "twice")],
)
def test_bad_frees_raise_and_change_nothing(ids, message):
    slots = StateSlotAllocator(num_slots=6)
    slots.alloc(3)
    with pytest.raises(AllocatorError, match=message):
        slots.free(ids)
    assert slots.num_free == 3
    slots.check_integrity()


def test_double_free_raises():
    slots = StateSlotAllocator(num_slots=4)
    got = slots.alloc(2)
    slots.free(got)
    with pytest.raises(AllocatorError, match="not allocated"):
        slots.free(got[:1])


def test_integrity_catches_a_corrupted_stack():
    slots = StateSlotAllocator(num_slots=4)
    slots.free(slots.alloc(3)[:2])  # ids 1 and 2 on the free stack
    slots._stack[0] = slots._stack[1]  # two copies of one free id
    with pytest.raises(IntegrityError):
        slots.check_integrity()


def test_memory_follows_the_ids_used_not_the_capacity():
    """A 2^28-id pool (a page-1 replay's never-evicting ceiling) costs what it hands out."""
    pages = IdAllocator(capacity=1 << 28, what="page")
    assert pages._in_use.nbytes + pages._stack.nbytes < 1 << 16
    got = pages.alloc(5_000)
    assert got.tolist() == list(range(1, 5_001)) and pages.num_free == (1 << 28) - 5_000
    pages.free(got[:10])
    assert pages.alloc(3).tolist() == [10, 9, 8]  # the freed ids first, last freed first
    assert pages.alloc(2).tolist() == [7, 6]
    pages.check_integrity()
    assert pages._in_use.nbytes < 1 << 16


def test_free_each_frees_repeated_ids_once_and_checks_every_one():
    ids = IdAllocator(capacity=8, what="page")
    ids.alloc(5)
    with pytest.raises(AllocatorError, match="page 7 that is not allocated"):
        ids.free_each([2, 2, 7])
    assert ids.num_free == 3  # nothing was freed
    ids.free_each([4, 2, 4, 4, 2])
    assert ids.num_free == 5 and sorted(ids.allocated().tolist()) == [1, 3, 5]
    ids.check_integrity()


class SlotMachine(RuleBasedStateMachine):
    """Random alloc / free against a set model; integrity after every step."""

    CAPACITY = 24

    def __init__(self) -> None:
        super().__init__()
        self.slots = StateSlotAllocator(num_slots=self.CAPACITY)
        self.held: set[int] = set()
        self.freed: set[int] = set()

    @rule(n=st.integers(0, 10))
    def alloc(self, n: int) -> None:
        got = self.slots.alloc(n)
        if n > self.CAPACITY - len(self.held):
            assert got is None
            return
        assert got is not None and got.size == n
        new = set(got.tolist())
        assert len(new) == n and not new & self.held and NULL_ID not in new
        assert all(1 <= s <= self.CAPACITY for s in new)
        self.held |= new
        self.freed -= new

    @precondition(lambda self: self.held)
    @rule(data=st.data())
    def free(self, data) -> None:
        some = data.draw(st.lists(st.sampled_from(sorted(self.held)), min_size=1, unique=True))
        self.slots.free(np.array(some))
        self.held -= set(some)
        self.freed |= set(some)

    @precondition(lambda self: self.held)
    @rule(data=st.data())
    def free_each_with_repeats(self, data) -> None:
        some = data.draw(st.lists(st.sampled_from(sorted(self.held)), min_size=1, max_size=12))
        self.slots.free_each(np.array(some))
        self.held -= set(some)
        self.freed |= set(some)

    @precondition(lambda self: self.held)
    @rule(data=st.data())
    def a_repeat_in_free_raises_and_changes_nothing(self, data) -> None:
        victim = data.draw(st.sampled_from(sorted(self.held)))
        with pytest.raises(AllocatorError, match="twice"):
            self.slots.free([victim, victim])

    @precondition(lambda self: self.freed)
    @rule(data=st.data())
    def double_free_raises(self, data) -> None:
        victim = data.draw(st.sampled_from(sorted(self.freed)))
        with pytest.raises(AllocatorError):
            self.slots.free([victim])

    @invariant()
    def conserved(self) -> None:
        self.slots.check_integrity()
        assert self.slots.num_used == len(self.held)
        assert self.slots.num_free + self.slots.num_used == self.CAPACITY


TestSlotMachine = SlotMachine.TestCase
TestSlotMachine.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)
