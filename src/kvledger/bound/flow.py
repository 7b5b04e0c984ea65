"""Most weight of intervals a pool of `capacity` slots can hold: an exact min-cost flow.

The problem: points 0 … n−1 in time; an interval (start a, end i, weight w), a < i, holds one
slot over the gaps a, a+1, …, i−1 (gap g lies between point g and point g + 1). Choose
intervals so that at most `capacity` hold over any gap and at most one ends at each point;
maximise the chosen weight.

As a flow (Arkin & Silverberg's model of interval scheduling on k machines): `capacity` units
travel from point 0 to point n−1. A unit either idles (arc g → g+1, cost 0, capacity
`capacity`) or carries an interval (arc a → end_i, cost −w, capacity 1), and every interval
ending at i passes one arc end_i → i of capacity 1, which is the "one per point" rule. A unit
on an interval arc is off the idle arcs a … i−1, so the flow holds at most `capacity`
intervals over every gap. The constraint matrix of a network is totally unimodular, so the
cheapest flow is integral: its cost is exactly minus the best weight, not a relaxation of it.

Solved by successive shortest paths (Dijkstra on reduced costs, potentials first computed by
one pass in topological order, the graph having no cycle); each path moves one unit, paths
cost more and more, and it stops at the first path that costs nothing (the all-idle one
always exists).

>>> best_interval_weight(3, [(0, 1, 5), (0, 2, 4), (1, 2, 3)], capacity=1)
8
>>> best_interval_weight(3, [(0, 1, 5), (0, 2, 4), (1, 2, 3)], capacity=2)
9
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

Interval = tuple[int, int, int]  # start point, end point, weight


class _Graph:
    __slots__ = ("head", "to", "cap", "cost")

    def __init__(self, num_nodes: int) -> None:
        self.head: list[list[int]] = [[] for _ in range(num_nodes)]
        self.to: list[int] = []
        self.cap: list[int] = []
        self.cost: list[int] = []

    def arc(self, u: int, v: int, cap: int, cost: int) -> None:
        # arc e and its residual twin e ^ 1
        self.head[u].append(len(self.to))
        self.to.append(v), self.cap.append(cap), self.cost.append(cost)
        self.head[v].append(len(self.to))
        self.to.append(u), self.cap.append(0), self.cost.append(-cost)


def best_interval_weight(num_points: int, intervals: Sequence[Interval], *,
                         capacity: int, gap_capacities: Sequence[int] | None = None) -> int:
    """The most total weight of intervals under the rules above (0 with no slot).

    `gap_capacities` (one per gap, each at most `capacity`) lowers the pool over single
    gaps: at most ``gap_capacities[g]`` intervals hold over gap g. Modelled as a parallel
    idle arc g → g+1 of capacity ``capacity − gap_capacities[g]`` whose cost −B (B more than
    all the weight together) makes every optimum fill it first, so that many units idle
    there and the rest, at most ``gap_capacities[g]``, may carry intervals; the B's are
    subtracted at the end. The flow stays a network flow, so the answer stays exact.
    """
    for a, i, w in intervals:
        if not 0 <= a < i < num_points or w < 0:
            raise ValueError(f"interval ({a}, {i}, {w}): expected 0 ≤ start < end < "
                             f"{num_points} and weight ≥ 0")
    if gap_capacities is not None and (
            len(gap_capacities) != max(num_points - 1, 0)
            or any(not 0 <= c <= capacity for c in gap_capacities)):
        raise ValueError(f"gap capacities: expected {max(num_points - 1, 0)} values in "
                         f"0 … {capacity}")
    useful = [iv for iv in intervals if iv[2] > 0]
    if capacity <= 0 or not useful or num_points < 2:
        return 0
    n = num_points
    g = _Graph(2 * n)  # point t is node t; the end node of point i is n + i
    big = sum(w for _, _, w in useful) + 1
    forced = 0  # Σ units that must idle, each worth `big`
    for t in range(n - 1):
        free = capacity if gap_capacities is None else gap_capacities[t]
        g.arc(t, t + 1, free, 0)
        if free < capacity:
            g.arc(t, t + 1, capacity - free, -big)
            forced += capacity - free
    ends = sorted({i for _, i, _ in useful})
    for i in ends:
        g.arc(n + i, i, 1, 0)
    for a, i, w in useful:
        g.arc(a, n + i, 1, -w)
    potential = _topological_distances(g, n)
    best, sink = 0, n - 1
    for _ in range(capacity):
        dist, via = _dijkstra(g, potential)
        if dist[sink] is None:
            break
        cost = dist[sink] + potential[sink] - potential[0]
        if cost >= 0:
            break
        for v, d in enumerate(dist):
            if d is not None:
                potential[v] += d
        v = sink
        while v != 0:  # one unit along the path (every interval arc has capacity 1)
            e = via[v]
            g.cap[e] -= 1
            g.cap[e ^ 1] += 1
            v = g.to[e ^ 1]
        best -= cost
    best -= forced * big
    if not 0 <= best < big:  # some forced unit did not idle: the construction is broken
        raise RuntimeError(f"interval flow: {best} outside 0 … {big - 1}")
    return best


def _topological_distances(g: _Graph, n: int) -> list[int]:
    """Shortest distances from point 0 over arcs with room, in the order 0, end_1, 1, …"""
    inf = float("inf")
    dist: list[float] = [inf] * (2 * n)
    dist[0] = 0
    for t in range(n):
        for u in ((n + t, t) if t else (0,)):
            if dist[u] == inf:
                continue
            for e in g.head[u]:
                if g.cap[e] > 0 and dist[u] + g.cost[e] < dist[g.to[e]]:
                    dist[g.to[e]] = dist[u] + g.cost[e]
    return [0 if d == inf else int(d) for d in dist]


def _dijkstra(g: _Graph, potential: list[int]) -> tuple[list[int | None], list[int]]:
    dist: list[int | None] = [None] * len(g.head)
    via = [-1] * len(g.head)
    dist[0] = 0
    heap = [(0, 0)]
    to, cap, cost = g.to, g.cap, g.cost
    while heap:
        d, u = heapq.heappop(heap)
        if d != dist[u]:
            continue
        pu = potential[u]
        for e in g.head[u]:
            if cap[e] <= 0:
                continue
            v = to[e]
            nd = d + cost[e] + pu - potential[v]  # reduced cost, never negative
            old = dist[v]
            if old is None or nd < old:
                dist[v], via[v] = nd, e
                heapq.heappush(heap, (nd, v))
    return dist, via
