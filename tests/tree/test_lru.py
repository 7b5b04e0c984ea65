"""LruList and LeafHeap: ordering, lazy invalidation, compaction."""

from __future__ import annotations

import pytest

from kvledger.tree.lru import LeafHeap, LruList
from kvledger.tree.node import Node


def _nodes(count: int) -> list[Node]:
    return [Node(node_id=i, parent=None, key=b"") for i in range(count)]


def test_lru_list_orders_by_refresh_and_skips_ineligible():
    a, b, c = _nodes(3)
    lru = LruList()
    for node in (a, b, c):
        lru.add(node)
    lru.refresh(a)
    assert list(lru) == [b, c, a]
    assert lru.oldest(2, lambda n: n is not b) == [c, a]
    assert lru.oldest(0, lambda n: True) == []
    lru.remove(c)
    assert list(lru) == [b, a] and c not in lru and len(lru) == 2


def test_leaf_heap_pops_oldest_stamp_and_drops_stale_entries():
    a, b, c = _nodes(3)
    a.last_access, b.last_access, c.last_access = 3, 1, 2
    heap = LeafHeap()
    for node in (a, b, c):
        heap.push(node)
    b.last_access = 9  # touched: its old entry is stale
    heap.push(b)
    assert heap.pop(lambda n: True) is c
    assert heap.pop(lambda n: n is not a) is b  # a is popped and discarded as ineligible
    assert heap.pop(lambda n: True) is None
    heap.push(a)  # a becomes eligible again at the same stamp: it must be re-pushable
    assert heap.pop(lambda n: True) is a


def test_leaf_heap_ignores_duplicate_pushes_and_dead_nodes():
    a, b = _nodes(2)
    a.last_access, b.last_access = 1, 2
    heap = LeafHeap()
    heap.push(a)
    heap.push(a)
    heap.push(b)
    assert len(heap) == 2 and heap.has_entry(a)
    a.alive = False
    assert heap.pop(lambda n: True) is b


def test_leaf_heap_compacts_when_stale_entries_pile_up():
    (a,) = _nodes(1)
    heap = LeafHeap()
    for stamp in range(3_000):
        a.last_access = stamp
        heap.push(a)
    # LeafHeap.push compacts once the heap passes 2 × live entries + 1,024 (one live here).
    assert len(heap) <= 2 * 1 + 1_024
    assert heap.has_entry(a) and heap.pop(lambda n: True) is a


def test_leaf_heap_and_lru_list_check_their_own_integrity():
    a, b = _nodes(2)
    a.last_access, b.last_access = 1, 2
    heap = LeafHeap()
    heap.push(a)
    heap.push(b)
    heap.check_integrity()
    heap._heap.reverse()  # breaks the heap order
    with pytest.raises(RuntimeError, match="heap order broken"):
        heap.check_integrity()
    heap._heap = []
    with pytest.raises(RuntimeError, match="without heap entries"):
        heap.check_integrity()
    lru = LruList()
    lru.add(a)
    lru.check_integrity()
    a.alive = False
    with pytest.raises(RuntimeError, match="removed nodes"):
        lru.check_integrity()
