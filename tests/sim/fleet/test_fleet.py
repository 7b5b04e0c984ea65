"""Fleet properties (issue: validation without a ground truth) and router rules.

The router constants are the engines' defaults: SGLang router `RouterConfig::default`
(sgl-router/src/config/types.rs: cache_threshold 0.3, balance_abs_threshold 64,
balance_rel_threshold 1.5) and Dynamo `KvRouterConfig` (overlap_score_weight 1.0).
"""

from __future__ import annotations

import numpy as np
import pytest

from kvledger.sglang.deploy import Deployment
from kvledger.sglang.plan import make_plan
from kvledger.sim.config import SimConfig, StepCost
from kvledger.sim.fleet import routers
from kvledger.sim.fleet.probe import PrefixDepth
from kvledger.sim.fleet.routers import ReplicaView, RouterKind, make_router
from kvledger.sim.fleet.run import simulate_fleet
from kvledger.sim.fleet.summary import summarize
from kvledger.sim.replay import simulate
from kvledger.sim.sources import load_workload
from kvledger.sim.workload import Request, Workload, WorkloadError

PLAN = make_plan("glm-5.3-flash", Deployment(tp_size=8), gpu="h200")
LINEAR = SimConfig(step_cost=StepCost())  # 12 ms a step + 0.02 ms a prefill token + 0.06 decode


def test_router_defaults_are_the_engines():
    assert (routers.CACHE_THRESHOLD, routers.BALANCE_ABS_THRESHOLD,
            routers.BALANCE_REL_THRESHOLD, routers.OVERLAP_SCORE_WEIGHT) == (0.3, 64, 1.5, 1.0)


def test_one_replica_is_the_single_rank_replay_exactly():
    w = load_workload(generator="chat", num_requests=60, seed=3)
    single = simulate(PLAN, w).summary
    fleet = simulate_fleet(PLAN, w, replicas=1, router=RouterKind.KV_AWARE).replicas[0].summary
    assert (fleet.duration_ms, fleet.counters.hit_tokens, fleet.counters.usable_hit_tokens,
            fleet.latency) == (single.duration_ms, single.counters.hit_tokens,
                               single.counters.usable_hit_tokens, single.latency)


@pytest.mark.parametrize("kind", list(RouterKind))
def test_every_request_is_served_exactly_once(kind):
    w = load_workload(generator="agent", num_requests=80, seed=2)
    f = simulate_fleet(PLAN, w, replicas=3, router=kind)
    served = sorted(rec.rid for r in f.replicas for rec in r.requests)
    assert served == sorted(r.rid for r in w.requests)
    assert sum(r.summary.num_requests for r in f.replicas) == len(w.requests)
    assert len(f.replica_of) == len(w.requests)


def _burst(n: int) -> Workload:
    """`n` distinct prompts of 2,000 tokens arriving together, 50 output tokens each: no
    prefix is shared, so only queueing differs between fleet sizes."""
    return Workload(name="burst", requests=tuple(
        Request(rid=i, arrival_ms=0.0, segment_ids=(i,), segment_tokens=(2_000,),
                output_tokens=50) for i in range(n)))


def test_more_replicas_never_worsen_p95_round_robin():
    """Identical-length prompts with no shared prefix, all arriving at once, under
    round-robin and the linear step cost: every replica runs the same FCFS schedule over its
    share, so a request's TTFT depends only on its position in its replica's queue. With R
    replicas ceil(n / R) positions are used and fewer requests sit at each deep position, so
    the TTFT multiset only shrinks as R grows: p95 cannot rise."""
    w = _burst(48)
    p95 = [summarize(simulate_fleet(PLAN, w, LINEAR, replicas=r, router=RouterKind.ROUND_ROBIN),
                     chunk_tokens=LINEAR.chunked_prefill_tokens).latency.ttft_ms.p95
           for r in (1, 2, 3, 4, 6)]
    assert p95 == sorted(p95, reverse=True) and p95[-1] < p95[0]


@pytest.mark.parametrize("kind", [RouterKind.PREFIX_AWARE, RouterKind.KV_AWARE,
                                  RouterKind.PRECISE_PREFIX, RouterKind.STATE_AWARE])
def test_cache_aware_routers_hit_at_least_round_robin_on_shared_prompts(kind):
    w = load_workload(generator="shared-prompt", num_requests=120, seed=1)
    rr = summarize(simulate_fleet(PLAN, w, replicas=4, router=RouterKind.ROUND_ROBIN),
                   chunk_tokens=8192)
    aware = summarize(simulate_fleet(PLAN, w, replicas=4, router=kind), chunk_tokens=8192)
    assert aware.token_hit_rate >= rr.token_hit_rate
    assert aware.usable_hit_rate >= rr.usable_hit_rate


NO_PREFIX = PrefixDepth(0, 0)


def _view(load: int, depth: PrefixDepth = NO_PREFIX, pages: int = 0) -> ReplicaView:
    return ReplicaView(outstanding_requests=load, active_pages=pages, kv_usage=0.0,
                       probe=lambda: depth)


def test_prefix_aware_switches_to_shortest_queue_only_when_both_thresholds_pass():
    req = Request(rid=0, arrival_ms=0.0, segment_ids=(1,), segment_tokens=(640,), output_tokens=1)
    keys = np.arange(10)

    def pick(loads: tuple[int, int]) -> int:
        r = make_router(RouterKind.PREFIX_AWARE, 2, 64)
        r.tree.insert(keys.tolist(), tenant=0, at=0)  # worker 0 saw this prompt
        return r.choose(req, keys, [_view(loads[0]), _view(loads[1])])

    assert pick((265, 200)) == 0  # 65 apart but 265 < 1.5 · 200: balanced, the match wins
    assert pick((65, 0)) == 1  # 65 apart and 65 > 1.5 · 0: imbalanced, shortest queue
    assert pick((64, 0)) == 0  # 64 apart: not over the absolute threshold


def test_state_aware_counts_only_the_prefix_with_a_state():
    req = Request(rid=0, arrival_ms=0.0, segment_ids=(1,), segment_tokens=(6_400,),
                  output_tokens=1)
    views = [_view(0, PrefixDepth(kv_pages=90, usable_pages=10), pages=0),
             _view(0, PrefixDepth(kv_pages=40, usable_pages=40), pages=0)]
    keys = np.arange(100)
    # Dynamo: logit = 1.0 · (100 − overlap) + (0 + 100): KV-aware prefers the deeper KV...
    assert make_router(RouterKind.KV_AWARE, 2, 64).choose(req, keys, views) == 0
    # ...state-aware the replica whose cached prefix a hybrid model can actually skip
    assert make_router(RouterKind.STATE_AWARE, 2, 64).choose(req, keys, views) == 1


def test_overload_is_said_with_the_replicas_that_would_hold_it():
    """Distinct 8,000-token prompts every 50 ms: 160,000 prefill tokens/s offered, while one
    replica's linear step cost serves 8,192 / (12 + 8,192 · 0.02) ms = 46,588 tokens/s; so
    3.4 replicas are busy, one replica saturates and four hold it."""
    w = Workload(name="steady", requests=tuple(
        Request(rid=i, arrival_ms=50.0 * i, segment_ids=(i,), segment_tokens=(8_000,),
                output_tokens=10) for i in range(200)))
    one = summarize(simulate_fleet(PLAN, w, LINEAR, replicas=1, router=RouterKind.ROUND_ROBIN),
                    chunk_tokens=LINEAR.chunked_prefill_tokens)
    assert round(one.rates.prefill_tokens_per_s) == 46_588
    assert one.overload.saturated and one.overload.queue_grows
    assert one.overload.replicas_needed == 4
    held = summarize(simulate_fleet(PLAN, w, LINEAR, replicas=4, router=RouterKind.LEAST_LOAD),
                     chunk_tokens=LINEAR.chunked_prefill_tokens)
    assert not held.overload.saturated


def test_bad_replica_count_is_refused():
    with pytest.raises(WorkloadError, match="--replicas 0"):
        simulate_fleet(PLAN, _burst(2), replicas=0, router=RouterKind.ROUND_ROBIN)
