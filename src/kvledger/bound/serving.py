"""The serving bound: R_S and R_KV on one serving replay's own schedule, its pinned slots charged.

The offline bound (`kvledger.bound.offline`) runs requests one at a time and lends the state
pool, less one request's slots, to caching. A serving replay runs up to N requests at once,
and each holds its slots from admission to finish (41 × 3 of GLM-5.3-Flash's 205 on one
rank), so most of that pool is never free to cache in. This bound takes what the replay did
— each request's admission (its match) and finish times, and the slots held by running
requests at each admission — and asks how much usable hit any choice of cached states could
have had on that schedule. It bounds that replay, not every policy: another policy runs
another schedule (and gets its own bound).

The argument, per request i in admission order (FCFS, so arrival order), with match time
mᵢ, finish time fᵢ and Cᵢ the slots not held by running requests at that match (the device
pool's K, plus the host pool's slots with a host tier, less the held ones):

* A usable hit of depth d at i needs the state of i's prefix d in the cache at mᵢ. The copy
  used was made by some earlier-admitted request p whose sequence passes that prefix (R_S
  lets any passer leave it), no later than min(f_p, mᵢ): a request's states are all made by
  its finish. So it was made by Xᵢ(d) = max over those p of min(f_p, mᵢ), and it is in the
  cache at every match j ≤ i with m_j > Xᵢ(d), and at mᵢ itself.
* At the match of j the cache holds at most C_j states. So the hits' states, each counted
  over the matches it spans, number at most C_j at match j: the interval problem of
  `kvledger.bound.flow` with points = matches and gap j − 1 = match j. Two requests using
  one copy span disjoint matches (the later one passed it after the earlier one's match).
* Deeper prefixes have fewer passers, so Xᵢ(d) falls with d: per distinct first spanned
  match the deepest depth is worth most (the staircase of `kvledger.bound.states`).

The flow is exact, so this is the most usable hit pages any state choice reaches on that
schedule with KV free (a hit capped at the window and at T pages). The KV side is the same
argument for pages with states free: a window page counts (consecutive or not) when a copy
is cached at the match, each copy spans the matches after it was made, and at match j at
most the pages no running request owns are cached (`serving_kv_bound_pages`). The replay's
usable hit is one choice on each side, so it is at most the smaller; the tests check that
on every policy, and that its token hit is at most the KV side.

>>> from kvledger.bound.trace import BoundTrace
>>> t = BoundTrace.of_paths([[1, 2, 3], [1, 2, 4], [1, 2, 3, 5]], [3, 3, 3])
>>> s = ServingSchedule(match_ms=(0.0, 1.0, 5.0), finish_ms=(0.5, 6.0, 9.0),
...                     free_slots=(4, 1, 1))
>>> serving_state_candidates(t, s, max_pages=8)[2]   # (first spanned match, depth)
[(2, 2), (1, 3)]
>>> serving_bound_pages(t, s, max_pages=8)  # abc must wait from match 1, where ab is
4
>>> serving_bound_pages(t, ServingSchedule(match_ms=s.match_ms, finish_ms=s.finish_ms,
...                                        free_slots=(4, 2, 1)), max_pages=8)
5
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Sequence
from dataclasses import dataclass

from kvledger.bound.flow import best_interval_weight
from kvledger.bound.trace import BoundTrace
from kvledger.sim.metrics import RequestRecord
from kvledger.sim.workload import Request


@dataclass(frozen=True, slots=True, kw_only=True)
class ServingSchedule:
    """What one replay did, per request in admission order."""

    match_ms: tuple[float, ...]  # when its admission matched the cache (non-decreasing)
    finish_ms: tuple[float, ...]  # when it finished (after its match)
    free_slots: tuple[int, ...]  # state slots not held by running requests at its match
    free_pages: tuple[int, ...] | None = None  # KV pages no running request owned then

    def __post_init__(self) -> None:
        if self.free_pages is not None and (len(self.free_pages) != len(self.match_ms)
                                            or min(self.free_pages, default=0) < 0):
            raise ValueError(f"{len(self.free_pages)} free page counts for "
                             f"{len(self.match_ms)} matches: expected one ≥ 0 each")
        n = len(self.match_ms)
        if len(self.finish_ms) != n or len(self.free_slots) != n:
            raise ValueError(f"schedule of {n} matches, {len(self.finish_ms)} finishes and "
                             f"{len(self.free_slots)} slot counts: expected one of each "
                             "per request")
        for i in range(n):
            if i and self.match_ms[i] < self.match_ms[i - 1]:
                raise ValueError(f"request {i}: matched at {self.match_ms[i]} ms, before "
                                 f"request {i - 1} ({self.match_ms[i - 1]} ms): expected "
                                 "admission order")
            if self.finish_ms[i] < self.match_ms[i] or self.free_slots[i] < 0:
                raise ValueError(f"request {i}: finish {self.finish_ms[i]} ms before its "
                                 f"match {self.match_ms[i]} ms, or {self.free_slots[i]} "
                                 "free slots (expected ≥ 0)")


def first_spanned(trace: BoundTrace, schedule: ServingSchedule, *,
                  max_pages: int) -> list[list[int]]:
    """Per request, for each window depth 1, 2, … (at most `max_pages`) that an earlier
    request passes, the first match a cached copy of that prefix must span (non-increasing
    with depth); the list stops at the first depth nobody passed."""
    if trace.num_requests != len(schedule.match_ms):
        raise ValueError(f"{trace.num_requests} requests but a schedule of "
                         f"{len(schedule.match_ms)}")
    latest_finish: dict[int, float] = {}  # prefix → the latest finish of its passers so far
    match = schedule.match_ms
    out: list[list[int]] = []
    for i, (seq, window) in enumerate(zip(trace.prefixes, trace.window_pages, strict=True)):
        firsts: list[int] = []
        for depth in range(1, min(window, max_pages) + 1):
            finish = latest_finish.get(seq[depth - 1])
            if finish is None:  # no earlier sequence has this prefix, so none a deeper one
                break
            made_by_ms = min(finish, match[i])
            firsts.append(min(bisect.bisect_right(match, made_by_ms), i))
        out.append(firsts)
        f = schedule.finish_ms[i]
        for prefix in seq:
            if latest_finish.get(prefix, -1.0) < f:
                latest_finish[prefix] = f
    return out


def serving_state_candidates(trace: BoundTrace, schedule: ServingSchedule, *,
                             max_pages: int) -> list[list[tuple[int, int]]]:
    """Per request, (first match its state must span, depth in pages) for each distinct
    first match, shallow first; depths at most `max_pages`."""
    out: list[list[tuple[int, int]]] = []
    for firsts in first_spanned(trace, schedule, max_pages=max_pages):
        steps: list[tuple[int, int]] = []
        for depth, first in enumerate(firsts, start=1):
            if steps and steps[-1][0] == first:
                steps[-1] = (first, depth)
            else:
                steps.append((first, depth))
        out.append(steps)
    return out


def serving_bound_pages(trace: BoundTrace, schedule: ServingSchedule, *,
                        max_pages: int) -> int:
    """The bound in pages of usable hit, summed over requests."""
    candidates = serving_state_candidates(trace, schedule, max_pages=max_pages)
    intervals = [(first - 1, i, depth) for i, steps in enumerate(candidates)
                 for first, depth in steps]
    n = trace.num_requests
    if n < 2:
        return 0
    top = max(schedule.free_slots)
    return best_interval_weight(n, intervals, capacity=top,
                                gap_capacities=list(schedule.free_slots[1:]))



def serving_kv_bound_pages(trace: BoundTrace, schedule: ServingSchedule, *,
                           max_pages: int) -> int:
    """The KV side of the same schedule, states free: the most window pages (consecutive
    or not, as R_KV counts them) cached at their request's match, with at most
    ``free_pages[j]`` cached pages at match j. Each page is a unit interval over the
    matches it spans (`first_spanned`); the most unit intervals under per-point
    capacities is the sweep that, wherever a point is over, drops the intervals that end
    last (an exchange argument; checked against exhaustive search in the tests)."""
    free = schedule.free_pages
    if free is None:
        raise ValueError("a schedule without free page counts has no KV side")
    n = trace.num_requests
    runs = [(first, i, num) for i, firsts in
            enumerate(first_spanned(trace, schedule, max_pages=max_pages))
            for first, num in _runs(firsts)]
    return most_unit_intervals(n, runs, capacities=free)


def most_unit_intervals(num_points: int, intervals: Sequence[tuple[int, int, int]], *,
                        capacities: Sequence[int]) -> int:
    """The most unit intervals kept, given as (first point, last point, how many), with at
    most ``capacities[j]`` kept over point j: sweep the points, and wherever one is over,
    drop the intervals that end last.

    >>> most_unit_intervals(3, [(0, 2, 1), (0, 0, 1), (1, 1, 1)], capacities=[1, 1, 1])
    2
    """
    starts: list[list[tuple[int, int]]] = [[] for _ in range(num_points)]
    for first, last, num in intervals:
        starts[first].append((last, num))
    live = [0] * num_points  # kept intervals by their last point
    ends: list[int] = []  # max-heap (negated) of last points
    total = kept = 0
    for j in range(num_points):
        for end, num in starts[j]:
            heapq.heappush(ends, -end)  # duplicates and spent ends are skipped below
            live[end] += num
            total += num
        while total > capacities[j]:
            end = -ends[0]
            if not live[end]:
                heapq.heappop(ends)
                continue
            cut = min(live[end], total - capacities[j])
            live[end] -= cut
            total -= cut
        kept += live[j]
        total -= live[j]
        live[j] = 0
    return kept


def _runs(values: list[int]) -> list[tuple[int, int]]:
    """(value, run length) of equal neighbours."""
    out: list[tuple[int, int]] = []
    for v in values:
        if out and out[-1][0] == v:
            out[-1] = (v, out[-1][1] + 1)
        else:
            out.append((v, 1))
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class ServingBound:
    """The serving bound of one replay, with what it charged."""

    page_tokens: int
    usable_hit_pages: int  # the smaller of the two sides
    state_hit_pages: int  # states counted, KV free
    kv_hit_pages: int  # KV counted, states free
    prompt_tokens: int  # of the requests it judged (the replay's finished ones)
    mean_free_slots: float  # state slots free to cache, averaged over the matches

    @property
    def usable_hit(self) -> float:
        return self.usable_hit_pages * self.page_tokens / self.prompt_tokens \
            if self.prompt_tokens else 0.0

    def fraction(self, usable_hit: float) -> float | None:
        return usable_hit / self.usable_hit if self.usable_hit else None


def serving_bound(requests: Sequence[Request], records: Sequence[RequestRecord], *,
                  page_tokens: int, device_pages: int, host_pages: int = 0,
                  host_slots: int = 0) -> ServingBound | None:
    """The bound of the replay that served `requests` (in arrival order) on a device pool
    of `device_pages` and finished with `records` (any order): min(state side, KV side).
    A host tier's `host_pages` and `host_slots` add to every match's free pages and slots
    (a copy on either tier counts once). None when the replay recorded no slots (a model
    without states)."""
    if any(r.free_slots_at_match is None or r.free_pages_at_match is None for r in records):
        return None
    if not records:  # nothing finished (every request too big for the pools): nothing to hit
        return ServingBound(page_tokens=page_tokens, usable_hit_pages=0, state_hit_pages=0,
                            kv_hit_pages=0, prompt_tokens=0, mean_free_slots=0.0)
    by_rid = {r.rid: r for r in records}
    served = [q for q in requests if q.rid in by_rid]  # admission order: FCFS
    ran = [by_rid[q.rid] for q in served]
    schedule = ServingSchedule(match_ms=tuple(r.admitted_ms for r in ran),
                               finish_ms=tuple(r.finished_ms for r in ran),
                               free_slots=tuple(r.free_slots_at_match + host_slots
                                                for r in ran),
                               free_pages=tuple(r.free_pages_at_match + host_pages
                                                for r in ran))
    trace = BoundTrace.of(served, page_tokens=page_tokens)
    states = serving_bound_pages(trace, schedule, max_pages=device_pages + host_pages)
    kv = serving_kv_bound_pages(trace, schedule, max_pages=device_pages + host_pages)
    return ServingBound(page_tokens=page_tokens, usable_hit_pages=min(states, kv),
                        state_hit_pages=states, kv_hit_pages=kv,
                        prompt_tokens=sum(q.prompt_tokens for q in served),
                        mean_free_slots=sum(schedule.free_slots) / len(ran))
