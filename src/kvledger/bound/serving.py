"""The serving bound: R_S on one serving replay's own schedule, with the slots it pinned.

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
schedule with KV free (a hit capped at the window and at T pages). The replay's own usable
hit is one such choice, so it is at most this; the tests check that on every policy.

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

    def __post_init__(self) -> None:
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


def serving_state_candidates(trace: BoundTrace, schedule: ServingSchedule, *,
                             max_pages: int) -> list[list[tuple[int, int]]]:
    """Per request, (first match its state must span, depth in pages) for each distinct
    first match, shallow first; depths at most `max_pages`."""
    if trace.num_requests != len(schedule.match_ms):
        raise ValueError(f"{trace.num_requests} requests but a schedule of "
                         f"{len(schedule.match_ms)}")
    latest_finish: dict[int, float] = {}  # prefix → the latest finish of its passers so far
    match = schedule.match_ms
    out: list[list[tuple[int, int]]] = []
    for i, (seq, window) in enumerate(zip(trace.prefixes, trace.window_pages, strict=True)):
        steps: list[tuple[int, int]] = []
        for depth in range(1, min(window, max_pages) + 1):
            finish = latest_finish.get(seq[depth - 1])
            if finish is None:  # no earlier sequence has this prefix, so none a deeper one
                break
            made_by_ms = min(finish, match[i])
            first = min(bisect.bisect_right(match, made_by_ms), i)
            if steps and steps[-1][0] == first:
                steps[-1] = (first, depth)
            else:
                steps.append((first, depth))
        out.append(steps)
        f = schedule.finish_ms[i]
        for prefix in seq:
            if latest_finish.get(prefix, -1.0) < f:
                latest_finish[prefix] = f
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



@dataclass(frozen=True, slots=True, kw_only=True)
class ServingBound:
    """The serving bound of one replay, with what it charged."""

    page_tokens: int
    usable_hit_pages: int
    prompt_tokens: int  # of the requests it judged (the replay's finished ones)
    mean_free_slots: float  # state slots free to cache, averaged over the matches

    @property
    def usable_hit(self) -> float:
        return self.usable_hit_pages * self.page_tokens / self.prompt_tokens \
            if self.prompt_tokens else 0.0

    def fraction(self, usable_hit: float) -> float | None:
        return usable_hit / self.usable_hit if self.usable_hit else None


def serving_bound(requests: Sequence[Request], records: Sequence[RequestRecord], *,
                  page_tokens: int, token_pages: int, host_slots: int = 0
                  ) -> ServingBound | None:
    """The bound of the replay that served `requests` (in arrival order) and finished with
    `records` (any order), on `token_pages` pages; a host tier's `host_slots` add to every
    match's free slots (a state on either tier counts once). None when the replay recorded
    no slots (a model without states)."""
    if any(r.free_slots_at_match is None for r in records):
        return None
    if not records:  # nothing finished (every request too big for the pools): nothing to hit
        return ServingBound(page_tokens=page_tokens, usable_hit_pages=0, prompt_tokens=0,
                            mean_free_slots=0.0)
    by_rid = {r.rid: r for r in records}
    served = [q for q in requests if q.rid in by_rid]  # admission order: FCFS
    ran = [by_rid[q.rid] for q in served]
    schedule = ServingSchedule(match_ms=tuple(r.admitted_ms for r in ran),
                               finish_ms=tuple(r.finished_ms for r in ran),
                               free_slots=tuple(r.free_slots_at_match + host_slots
                                                for r in ran))
    trace = BoundTrace.of(served, page_tokens=page_tokens)
    pages = serving_bound_pages(trace, schedule, max_pages=token_pages)
    return ServingBound(page_tokens=page_tokens, usable_hit_pages=pages,
                        prompt_tokens=sum(q.prompt_tokens for q in served),
                        mean_free_slots=sum(schedule.free_slots) / len(ran))
