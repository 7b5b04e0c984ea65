"""Accounting allocators: check-then-commit, null index, conservation under any sequence."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kvledger.sim.accounting import NULL_INDEX, IndexAllocator


def test_null_index_is_never_handed_out():
    alloc = IndexAllocator(capacity=3, what="page")
    got = alloc.alloc(3)
    assert NULL_INDEX not in got.tolist() and sorted(got.tolist()) == [1, 2, 3]
    assert alloc.alloc(1) is None and alloc.num_free == 0


def test_running_out_changes_nothing():
    alloc = IndexAllocator(capacity=5, what="slot")
    alloc.alloc(4)
    assert alloc.alloc(2) is None
    assert alloc.num_free == 1


def test_integrity_catches_a_lost_index_and_a_double_hold():
    alloc = IndexAllocator(capacity=4, what="page")
    held = alloc.alloc(2)
    alloc.check_integrity(used=held)
    with pytest.raises(RuntimeError, match="holders claim 1"):
        alloc.check_integrity(used=held[:1])
    with pytest.raises(RuntimeError, match="lost or held twice"):
        alloc.check_integrity(used=np.array([held[0], held[0]]))


def test_double_free_is_a_programmer_error():
    alloc = IndexAllocator(capacity=3, what="page")
    got = alloc.alloc(2)[:1]
    alloc.free(got)
    alloc.free(got)  # the stack still has room, so the duplicate is only caught by the check
    with pytest.raises(RuntimeError, match="free twice"):
        alloc.check_integrity()
    with pytest.raises(AssertionError, match="freeing more than was used"):
        alloc.free(np.array([2]))


class AllocatorMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.alloc = IndexAllocator(capacity=12, what="page")
        self.held: list[np.ndarray] = []

    @rule(count=st.integers(0, 6))
    def take(self, count):
        before = self.alloc.num_free
        got = self.alloc.alloc(count)
        if count > before:
            assert got is None and self.alloc.num_free == before
        else:
            assert got is not None and len(got) == count
            self.held.append(got)

    @precondition(lambda self: self.held)
    @rule(pick=st.integers(0, 100))
    def give_back(self, pick):
        self.alloc.free(self.held.pop(pick % len(self.held)))

    @invariant()
    def conserved(self):
        used = np.concatenate(self.held) if self.held else np.zeros(0, dtype=np.int64)
        self.alloc.check_integrity(used=used)


TestAllocatorMachine = AllocatorMachine.TestCase
TestAllocatorMachine.settings = settings(max_examples=40, stateful_step_count=30, deadline=None)
