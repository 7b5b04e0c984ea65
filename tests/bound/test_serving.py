"""The serving bound: the flow with per-gap capacities and the staircase against exhaustive
search, its input checks, and every serving replay below its own bound (device, host tier)."""

from __future__ import annotations

from itertools import combinations, product

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kvledger.bound.flow import best_interval_weight
from kvledger.bound.serving import (
    ServingSchedule,
    most_unit_intervals,
    serving_bound_pages,
    serving_kv_bound_pages,
    serving_state_candidates,
)
from kvledger.bound.trace import BoundTrace
from kvledger.report.policy_compare import COMPARE_PAIRS, compare_policies
from kvledger.sglang.deploy import Deployment, KVDtype
from kvledger.sglang.plan import make_plan
from kvledger.sim.config import SimConfig
from kvledger.sim.generators import GENERATORS, GeneratorParams


def _brute_intervals(n, intervals, gap_capacities) -> int:
    def feasible(chosen) -> bool:
        ends = [i for _, i, _ in chosen]
        return len(ends) == len(set(ends)) and all(
            sum(a <= g < i for a, i, _ in chosen) <= c for g, c in enumerate(gap_capacities))
    return max(sum(w for *_, w in c) for k in range(len(intervals) + 1)
               for c in combinations(intervals, k) if feasible(c))


gapped = st.integers(2, 6).flatmap(lambda n: st.tuples(
    st.just(n),
    st.lists(st.tuples(st.integers(0, n - 2), st.integers(1, n - 1), st.integers(0, 9))
             .filter(lambda t: t[0] < t[1]), max_size=7),
    st.lists(st.integers(0, 3), min_size=n - 1, max_size=n - 1)))


@given(gapped)
def test_flow_with_gap_capacities_equals_exhaustive_choice(case):
    n, ivs, caps = case
    top = max(caps)
    assert best_interval_weight(n, ivs, capacity=top, gap_capacities=caps) == \
        _brute_intervals(n, ivs, caps)


def test_flow_gap_capacities_worked_example():
    # (0,1,5) and (1,2,3) fit one slot; a gap of no slot takes whatever spans it
    ivs = [(0, 1, 5), (0, 2, 4), (1, 2, 3)]
    assert best_interval_weight(3, ivs, capacity=1, gap_capacities=[1, 1]) == 8
    assert best_interval_weight(3, ivs, capacity=2, gap_capacities=[2, 0]) == 5
    assert best_interval_weight(3, ivs, capacity=2, gap_capacities=[0, 2]) == 3
    with pytest.raises(ValueError, match="gap capacities: expected 2 values in 0 … 2"):
        best_interval_weight(3, ivs, capacity=2, gap_capacities=[3, 0])


def _brute_serving(trace: BoundTrace, s: ServingSchedule, max_pages: int) -> int:
    """Straight from the definition: each request picks a depth with a passer (or none);
    its state spans every match j ≤ i after the latest time it can have been made, and
    match i; at most free_slots[j] states span match j."""
    n = trace.num_requests
    options: list[list[tuple[int, frozenset[int]]]] = []
    for i in range(n):
        opts = [(0, frozenset())]
        for d in range(1, min(trace.window_pages[i], max_pages) + 1):
            passers = [p for p in range(i) if trace.prefixes[i][d - 1] in trace.prefixes[p]]
            if not passers:
                break
            made = max(min(s.finish_ms[p], s.match_ms[i]) for p in passers)
            span = frozenset(j for j in range(i) if s.match_ms[j] > made) | {i}
            opts.append((d, span))
        options.append(opts)
    best = 0
    for pick in product(*options):
        if all(sum(j in span for _, span in pick) <= s.free_slots[j] for j in range(n)):
            best = max(best, sum(d for d, _ in pick))
    return best


@st.composite
def served(draw):
    n = draw(st.integers(1, 6))
    paths = [draw(st.lists(st.integers(0, 2), min_size=1, max_size=4)) for _ in range(n)]
    windows = [draw(st.integers(0, len(p))) for p in paths]
    match = sorted(draw(st.lists(st.integers(0, 8), min_size=n, max_size=n)))
    finish = [m + draw(st.integers(0, 6)) for m in match]
    free = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    return (BoundTrace.of_paths(paths, windows),
            ServingSchedule(match_ms=tuple(map(float, match)),
                            finish_ms=tuple(map(float, finish)), free_slots=tuple(free)))


@given(served(), st.integers(1, 4))
def test_serving_bound_equals_exhaustive_search_of_its_model(case, max_pages):
    trace, schedule = case
    assert serving_bound_pages(trace, schedule, max_pages=max_pages) == \
        _brute_serving(trace, schedule, max_pages)


units = st.integers(1, 6).flatmap(lambda n: st.tuples(
    st.just(n),
    st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.integers(1, 2))
             .map(lambda t: (min(t[0], t[1]), max(t[0], t[1]), t[2])), max_size=6),
    st.lists(st.integers(0, 3), min_size=n, max_size=n)))


@given(units)
def test_the_sweep_keeps_the_most_unit_intervals(case):
    n, ivs, caps = case
    singles = [(a, b) for a, b, k in ivs for _ in range(k)]
    best = max(k for k in range(len(singles) + 1) for c in combinations(singles, k)
               if all(sum(a <= j <= b for a, b in c) <= caps[j] for j in range(n)))
    assert most_unit_intervals(n, ivs, capacities=caps) == best


def _brute_kv(trace: BoundTrace, s: ServingSchedule, max_pages: int) -> int:
    """Each window page with a passer is kept or not; a kept one spans the matches after
    it can have been made, and its own; at most free_pages[j] kept pages span match j."""
    n = trace.num_requests
    spans = []
    for i in range(n):
        for d in range(1, min(trace.window_pages[i], max_pages) + 1):
            passers = [p for p in range(i) if trace.prefixes[i][d - 1] in trace.prefixes[p]]
            if not passers:
                break
            made = max(min(s.finish_ms[p], s.match_ms[i]) for p in passers)
            spans.append(frozenset(j for j in range(i) if s.match_ms[j] > made) | {i})
    return max(k for k in range(len(spans) + 1) for c in combinations(spans, k)
               if all(sum(j in span for span in c) <= s.free_pages[j] for j in range(n)))


@given(served(), st.integers(1, 3), st.data())
def test_the_kv_side_equals_exhaustive_search_of_its_model(case, max_pages, data):
    trace, schedule = case
    if trace.num_requests > 4:
        return  # 2^(pages) subsets: keep the search small
    free = tuple(data.draw(st.integers(0, 4)) for _ in range(trace.num_requests))
    schedule = ServingSchedule(match_ms=schedule.match_ms, finish_ms=schedule.finish_ms,
                               free_slots=schedule.free_slots, free_pages=free)
    assert serving_kv_bound_pages(trace, schedule, max_pages=max_pages) == \
        _brute_kv(trace, schedule, max_pages)


def test_a_state_made_after_a_match_does_not_hold_a_slot_there():
    # r0 finishes at 4, after r1's match at 1: r2's use of r0's abc spans only r2's match
    t = BoundTrace.of_paths([[1, 2, 3], [1, 2, 4], [1, 2, 3, 5]], [3, 3, 3])
    s = ServingSchedule(match_ms=(0.0, 1.0, 5.0), finish_ms=(4.0, 6.0, 9.0),
                        free_slots=(4, 1, 1))
    assert serving_state_candidates(t, s, max_pages=8) == [[], [(1, 2)], [(2, 3)]]
    assert serving_bound_pages(t, s, max_pages=8) == 5


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"match_ms": (0.0, 1.0), "finish_ms": (1.0,), "free_slots": (1, 1)},
     "schedule of 2 matches, 1 finishes and 2 slot counts"),
    ({"match_ms": (2.0, 1.0), "finish_ms": (3.0, 3.0), "free_slots": (1, 1)},
     "request 1: matched at 1.0 ms, before request 0"),
    ({"match_ms": (0.0, 1.0), "finish_ms": (1.0, 0.5), "free_slots": (1, 1)},
     "request 1: finish 0.5 ms before its match 1.0 ms"),
    ({"match_ms": (0.0,), "finish_ms": (1.0,), "free_slots": (-1,)},
     "-1 free slots"),
    ({"match_ms": (0.0,), "finish_ms": (1.0,), "free_slots": (1,), "free_pages": (1, 2)},
     "2 free page counts for 1 matches"),
])
def test_a_bad_schedule_is_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ServingSchedule(**kwargs)


def _below(comparison) -> None:
    for row in comparison.rows[:-1]:
        sb = row.serving_bound
        assert sb is not None, row.label
        assert sb.prompt_tokens == row.summary.counters.prompt_tokens
        assert row.usable_hit <= sb.usable_hit + 1e-12, row.label
        # the KV side counts every cached window page: it bounds the token hit too
        assert row.token_hit <= sb.kv_hit_pages * sb.page_tokens / sb.prompt_tokens + 1e-12
        assert sb.usable_hit_pages == min(sb.state_hit_pages, sb.kv_hit_pages)
    assert comparison.rows[-1].serving_bound is None  # the ceiling runs no schedule


@pytest.mark.parametrize("name", ["chat", "agent", "tool-use"])
def test_every_replay_is_below_its_serving_bound(name):
    # 10 GiB, fp8 KV: 33 slots, 30 of them held by 10 running requests at full concurrency
    plan = make_plan("glm-5.3-flash", available_gib=10, kv_cache_dtype="fp8_e4m3")
    work = GENERATORS[name].generate(GeneratorParams(num_requests=80, seed=1))
    _below(compare_policies(plan, work, SimConfig(), COMPARE_PAIRS))


def test_with_a_host_tier_the_serving_bound_counts_host_slots():
    pytest.importorskip("torch")
    plan = make_plan("glm-5.3-flash", Deployment(
        kv_cache_dtype=KVDtype.FP8_E4M3, enable_hierarchical_cache=True, hicache_ratio=2.0),
        available_gib=10)
    work = GENERATORS["chat"].generate(GeneratorParams(num_requests=60, seed=2))
    comparison = compare_policies(plan, work, SimConfig(), COMPARE_PAIRS[:3])
    _below(comparison)
    host = comparison.rows[0].summary.host
    assert comparison.rows[0].serving_bound.mean_free_slots > host.capacity_slots
