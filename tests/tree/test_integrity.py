"""check_integrity catches each kind of drift instead of letting it heal silently."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from kvledger.tree import Component, RadixTree, Tier
from kvledger.tree.tokens import readonly
from tree.radix_factories import strip


def _tree() -> tuple[RadixTree, object, object]:
    """root -- p (0..9, state 0, backed up) -- c (10..19, state 1); c locked."""
    tree = RadixTree(page_size=1)
    parent = tree.insert(strip(0, 10), strip(0, 10), 0).node
    child = tree.insert(strip(0, 20), strip(0, 20), 1).node
    tree.set_host_value(parent, Component.FULL, strip(100, 10))
    tree.lock(child)
    tree.check_integrity()
    return tree, parent, child


def _bump_lock(tree, parent, child):
    child.full.locks[Tier.DEVICE] += 1


def _drift_counter(tree, parent, child):
    tree.books[Tier.DEVICE].full_evictable_tokens += 1


def _drop_from_mamba_lru(tree, parent, child):
    tree.books[Tier.DEVICE].states.remove(parent)


def _share_a_slot(tree, parent, child):
    child.full.values[Tier.DEVICE] = readonly(np.r_[strip(10, 9), [0]])


def _orphan_device_kv(tree, parent, child):
    parent.full.values[Tier.DEVICE] = None


def _two_slot_state(tree, parent, child):
    parent.mamba.values[Tier.DEVICE] = (0, 1)


def _state_without_kv(tree, parent, child):
    child.mamba.values[Tier.HOST] = 5
    tree.books[Tier.HOST].states.add(child)
    tree.books[Tier.HOST].mamba_evictable_slots += 1


def _stale_child_count(tree, parent, child):
    parent.num_children_on[Tier.HOST] = 1


def _negative_host_lock(tree, parent, child):
    parent.full.locks[Tier.HOST] = -1


def _wrong_child_key(tree, parent, child):
    parent.children[b"\x00" * 8] = parent.children.pop(strip(10, 1).tobytes())


@pytest.mark.parametrize(
    ("corrupt", "message"),
    [
        (_bump_lock, "device FULL lock=2 but receipts account for 1"),
        (_drift_counter, "device full_evictable_tokens=1 but the nodes hold 0"),
        (_drop_from_mamba_lru, "device state and MAMBA LRU membership disagree"),
        (_share_a_slot, "device FULL slot is held by two nodes"),
        (_orphan_device_kv, "device FULL is not root-connected"),
        (_two_slot_state, "is not exactly one slot"),
        (_state_without_kv, "host MAMBA state without FULL KV"),
        (_stale_child_count, "host child count 1 is stale"),
        (_negative_host_lock, "host FULL lock=-1"),
        (_wrong_child_key, "not under its first page"),
    ],
)
def test_check_integrity_names_the_broken_invariant(corrupt: Callable, message: str):
    tree, parent, child = _tree()
    corrupt(tree, parent, child)
    with pytest.raises(RuntimeError, match=message):
        tree.check_integrity()


def test_missing_heap_entry_for_an_evictable_leaf_is_caught():
    tree = RadixTree(page_size=1)
    tree.insert(strip(0, 4), strip(0, 4), 0)
    tree.books[Tier.DEVICE].leaves._pushed.clear()
    with pytest.raises(RuntimeError, match="device FULL is evictable but has no heap entry"):
        tree.check_integrity()
