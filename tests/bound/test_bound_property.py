"""Property: on small random workloads and tight pools, no policy's serving replay beats the
offline bound (the replay runs concurrently, the bound's model one request at a time; the
docs, "Offline bound", say why the one should stay below the other)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvledger.report.policy_compare import COMPARE_PAIRS, compare_policies
from kvledger.sim.config import SimConfig
from sim.sim_factories import from_prompts, prompts, request, small_plan, workload


def _assert_below(comparison) -> None:
    bound = comparison.bound
    for row in comparison.rows[:-1]:
        assert row.usable_hit <= bound.usable_hit + 1e-12, (row.label, bound.bound)
        # and below its own serving bound (`kvledger.bound.serving`), with more running
        # requests than the offline model charges
        assert row.usable_hit <= row.serving_bound.usable_hit + 1e-12, row.label


@pytest.mark.slow
@settings(max_examples=30, suppress_health_check=[HealthCheck.too_slow])
@given(prompts(segment_ids=4, segment_tokens=(40, 900), max_segments=5, requests=(2, 16),
               spread_ms=2_000),
       st.integers(7, 14), st.integers(1, 4), st.sampled_from([64, 128, 256]),
       st.integers(30, 90))
def test_no_replay_beats_the_bound(drawn, slots, running, chunk_tokens, pages):
    plan = small_plan(max_total_tokens=pages * 64, max_mamba_cache_size=slots,
                      max_running_requests=running)
    _assert_below(compare_policies(plan, from_prompts(drawn),
                                   SimConfig(chunked_prefill_tokens=chunk_tokens), COMPARE_PAIRS))


def test_a_request_that_never_fits_counts_for_neither_side():
    # Found by the property above: r2 (1,922 tokens = 31 pages) never fits 30 pages, so the
    # replays leave it unfinished and their hit rate is over the other three prompts (169
    # tokens, 64 of them hit: r3 resumes from r1's page). The bound and the ceiling judge the
    # same three; over all four prompts the bound's rate was 64 / 1,791, below the replay's.
    plan = small_plan(max_total_tokens=30 * 64, max_mamba_cache_size=7, max_running_requests=1)
    work = workload(request(0, 0.0, [(1, 40)], output=0), request(1, 0.0, [(1, 64)], output=0),
                    request(2, 0.0, [(1, 40), (1, 40), (1, 40), (1, 602), (1, 900)], output=300),
                    request(3, 0.0, [(1, 65)], output=0))
    comparison = compare_policies(plan, work, SimConfig(chunked_prefill_tokens=64),
                                  COMPARE_PAIRS[:1])
    engine = comparison.rows[0]
    assert [u.rid for u in engine.summary.unfinished] == [2]
    assert (engine.summary.counters.prompt_tokens, engine.summary.counters.usable_hit_tokens) \
        == (169, 64)
    assert comparison.bound.prompt_tokens == 169
    assert comparison.bound.bound.usable_hit_tokens == 64 and comparison.bound.bound.exact
    assert engine.fraction_of_bound == 1.0
    _assert_below(comparison)
