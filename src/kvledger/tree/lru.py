"""Recency orders for eviction: an O(1) LRU list and a lazy min-heap of evictable leaves.

* :class:`LruList` orders MAMBA states (device or host). A state is refreshed only when a
  request consumes it, so the list is a plain recency list: O(1) add, remove and refresh.
* :class:`LeafHeap` orders FULL eviction candidates. FULL evicts leaf first, and a node
  becomes a leaf long after it was last touched (when its last child goes), so candidates
  are keyed by the node's ``last_access`` stamp rather than by when they entered the set.
  Entries are lazy: the tree pushes a node whenever it may have become a candidate or its
  stamp changed, and ``pop`` discards entries that are stale or no longer candidates.

>>> from kvledger.tree.node import Node
>>> a, b = Node(node_id=1, parent=None, key=b""), Node(node_id=2, parent=None, key=b"")
>>> a.last_access, b.last_access = 5, 3
>>> heap = LeafHeap()
>>> heap.push(a); heap.push(b)
>>> heap.pop(lambda node: True).id, heap.pop(lambda node: True).id, heap.pop(lambda n: True)
(2, 1, None)
"""

from __future__ import annotations

import heapq
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvledger.tree.node import Node


class LruList:
    """Nodes in recency order, least recent first."""

    __slots__ = ("_order",)

    def __init__(self) -> None:
        self._order: OrderedDict[Node, None] = OrderedDict()

    def add(self, node: Node) -> None:
        assert node not in self._order, f"{node!r} is already in the LRU list"
        self._order[node] = None

    def remove(self, node: Node) -> None:
        del self._order[node]

    def refresh(self, node: Node) -> None:
        self._order.move_to_end(node)

    def __contains__(self, node: Node) -> bool:
        return node in self._order

    def __len__(self) -> int:
        return len(self._order)

    def __iter__(self) -> Iterator[Node]:
        return iter(self._order)

    def check_integrity(self) -> None:
        dead = [node for node in self._order if not node.alive]
        if dead:
            raise RuntimeError(f"LRU list holds removed nodes {dead[:3]}")

    def oldest(self, count: int, eligible: Callable[[Node], bool]) -> list[Node]:
        """Up to ``count`` eligible nodes, least recent first."""
        picked: list[Node] = []
        if count <= 0:
            return picked
        for node in self._order:
            if eligible(node):
                picked.append(node)
                if len(picked) == count:
                    break
        return picked


class LruStates:
    """The default order in which states leave a tier: least recently consumed first.
    A state-eviction policy replaces it on a tree (``tree.state_victims``) and must offer
    the same ``pick``: up to ``count`` eligible nodes, in eviction order, nothing changed."""

    __slots__ = ()

    def pick(self, tier: object, states: LruList, count: int,
             eligible: Callable[[Node], bool]) -> list[Node]:
        return states.oldest(count, eligible)


LRU_STATES = LruStates()


class LeafHeap:
    """Candidates keyed by ``last_access``; at most one live entry per (node, stamp)."""

    __slots__ = ("_heap", "_pushed")

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, Node]] = []  # (stamp, node id, node)
        self._pushed: dict[Node, int] = {}  # node -> stamp of its live entry

    def push(self, node: Node) -> None:
        stamp = node.last_access
        if self._pushed.get(node) == stamp:
            return
        self._pushed[node] = stamp
        heapq.heappush(self._heap, (stamp, node.id, node))
        if len(self._heap) > 2 * len(self._pushed) + 1024:
            self._compact()

    def pop(self, is_candidate: Callable[[Node], bool]) -> Node | None:
        """The candidate with the oldest stamp, removed; None when there is none."""
        heap, pushed = self._heap, self._pushed
        while heap:
            stamp, _, node = heapq.heappop(heap)
            if pushed.get(node) != stamp:
                continue  # superseded by a newer stamp
            del pushed[node]
            if node.alive and node.last_access == stamp and is_candidate(node):
                return node
        return None

    def peek(self, is_candidate: Callable[[Node], bool]) -> Node | None:
        """The candidate ``pop`` would return, left in place; entries ``pop`` would discard
        on the way are discarded (they no longer name a candidate)."""
        heap, pushed = self._heap, self._pushed
        while heap:
            stamp, _, node = heap[0]
            live = pushed.get(node) == stamp
            if live and node.alive and node.last_access == stamp and is_candidate(node):
                return node
            heapq.heappop(heap)
            if live:
                del pushed[node]
        return None

    def has_entry(self, node: Node) -> bool:
        """Whether ``node`` has a live entry at its current stamp."""
        return self._pushed.get(node) == node.last_access

    def entries(self) -> list[tuple[int, int, Node]]:
        return list(self._heap)

    def check_integrity(self) -> None:
        """Heap order holds and every live entry the index records is in the heap."""
        heap = self._heap
        for i in range(1, len(heap)):
            if heap[(i - 1) // 2][:2] > heap[i][:2]:
                raise RuntimeError(f"leaf heap order broken at position {i}")
        present = {(node.id, stamp) for stamp, _, node in heap}
        missing = [n for n, s in self._pushed.items() if (n.id, s) not in present]
        if missing:
            raise RuntimeError(f"leaf heap index lists {missing[:3]} without heap entries")

    def __len__(self) -> int:
        return len(self._heap)

    def _compact(self) -> None:
        live = {n: s for n, s in self._pushed.items() if n.alive and n.last_access == s}
        self._pushed = live
        self._heap = [(s, n.id, n) for n, s in live.items()]
        heapq.heapify(self._heap)
