"""The offline bound against what the serving replays reach and against the FULL-only ceiling,
on generated workloads and the shared synthetic trace, where the state pool binds."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvledger.bound import BoundTrace
from kvledger.bound.kv import kv_bound_pages
from kvledger.report.policy_compare import COMPARE_PAIRS, compare_policies
from kvledger.sglang.deploy import Deployment
from kvledger.sglang.plan import make_plan
from kvledger.sim.config import SimConfig
from kvledger.sim.generators import GENERATORS, GeneratorParams
from kvledger.sim.sources import load_workload

TRACE = Path(__file__).parents[1] / "data" / "synthetic_trace.jsonl"


def tight_plan():
    """10 GiB free, fp8 KV: 12,081 token pages and 33 state slots; the state pool binds."""
    return make_plan("glm-5.3-flash", available_gib=10, kv_cache_dtype="fp8_e4m3")


def _check(comparison, workload, plan):
    bound = comparison.bound
    assert bound is not None and not bound.bound.exact
    policies, ceiling = comparison.rows[:-1], comparison.rows[-1]
    for row in policies:
        assert row.usable_hit <= bound.usable_hit, row.label
        assert row.fraction_of_bound == pytest.approx(row.usable_hit / bound.usable_hit)
    # The bound spends T pages on KV; the FULL-only ceiling spends the same bytes plus the
    # state pool's. Belady on that larger pool bounds both the ceiling (LRU, prompts only)
    # and the bound's KV relaxation.
    trace = BoundTrace.of(workload.requests, page_tokens=plan.layout.page_tokens)
    full_only = kv_bound_pages(trace, pages=comparison.ceiling_pool_tokens
                               // plan.layout.page_tokens) * plan.layout.page_tokens
    full_only_rate = full_only / workload.prompt_tokens
    assert bound.usable_hit <= full_only_rate + 1e-12
    assert ceiling.usable_hit <= full_only_rate + 1e-12
    return bound


@pytest.mark.parametrize("name", ["chat", "shared-prompt", "zipf"])
def test_every_policy_is_below_the_bound_on_generated_traces(name):
    plan = tight_plan()
    work = GENERATORS[name].generate(GeneratorParams(num_requests=60, seed=3))
    bound = _check(compare_policies(plan, work, SimConfig(), COMPARE_PAIRS), work, plan)
    assert bound.bound.state_slots == 33 - 3  # the running request holds 3


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_every_pair_is_below_the_bound_on_every_generator(name):
    plan = tight_plan()
    work = GENERATORS[name].generate(GeneratorParams(num_requests=300, seed=0))
    _check(compare_policies(plan, work, SimConfig()), work, plan)


@pytest.mark.slow
def test_every_pair_is_below_the_bound_on_the_shared_trace():
    plan = make_plan("glm-5.3-flash", available_gib=60, kv_cache_dtype="fp8_e4m3")
    work = load_workload(trace=TRACE, generator=None, num_requests=600, seed=0,
                         rate_per_s=None, time_scale=1.0)
    _check(compare_policies(plan, work, SimConfig()), work, plan)


def test_with_attention_dp_the_ceiling_and_the_bound_see_the_replayed_share():
    # DP 8 with DP attention: rank 0 replays every 8th request; the ceiling and the bound
    # must judge those, not the whole workload (the pools are one rank's).
    plan = make_plan("glm-5.3-flash", Deployment(tp_size=8, dp_size=8, enable_dp_attention=True),
                     available_gib=10, kv_cache_dtype="fp8_e4m3")
    work = GENERATORS["chat"].generate(GeneratorParams(num_requests=80, seed=0))
    comparison = compare_policies(plan, work, SimConfig(), COMPARE_PAIRS[:1])
    share = work.share(0, 8)
    assert comparison.bound.prompt_tokens == share.prompt_tokens
    assert comparison.rows[0].summary.counters.prompt_tokens == share.prompt_tokens
    _check(comparison, share, plan)
