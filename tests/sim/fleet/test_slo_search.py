"""SLO sizing: the smallest fleet whose own replay meets the SLO (`sim.fleet.slo_search`).

One small generated workload (120 shared-prompt requests at 15/s) keeps every search to a
second or two; GLM-5.3-Flash on H200 plans at tp 4 and tp 8 only (tp 1 and 2: the weights do
not fit).
"""

from __future__ import annotations

import math

import pytest

from kvledger.core.runner import Processes
from kvledger.sglang.deploy import Deployment
from kvledger.sglang.plan import make_plan
from kvledger.sglang.rules import DEFAULT_RULES
from kvledger.sim.config import SimConfig
from kvledger.sim.fleet.launch import replica_commands, router_command, worker_urls
from kvledger.sim.fleet.routers import RouterKind
from kvledger.sim.fleet.slo import Candidate, Layout, Outcome, Slo, evaluate
from kvledger.sim.fleet.slo_search import Objective, search
from kvledger.sim.sources import load_workload
from kvledger.sizing.prices import price_table

MODEL = "glm-5.3-flash"


@pytest.fixture(scope="module")
def workload():
    return load_workload(generator="shared-prompt", num_requests=120, seed=1, rate_per_s=15)


def _search(workload, slo, **kw):
    kw.setdefault("host_tiers", (False,))
    kw.setdefault("gpus", ("H200",))
    return search(MODEL, Deployment(), workload, slo, rules=DEFAULT_RULES, **kw)


def test_a_loose_slo_takes_the_one_smallest_layout(workload):
    r = _search(workload, Slo(ttft_p95_ms=100))
    assert r.best.candidate == Candidate(layout=Layout(gpu="H200", tp=4, host_tier=False),
                                         replicas=1, router=RouterKind.ROUND_ROBIN)
    assert r.best.outcome.ttft_p95_ms == pytest.approx(40.243786)
    assert (r.replayed, r.not_needed) == (1, 85)  # 2 layouts × (1 + 7 × 6 routers) − 1
    assert [layout.tp for layout, _ in r.refused] == [1, 2]
    assert "do not fit in H200's 139.34 GiB" in r.refused[0][1]


def test_the_chosen_fleet_replayed_alone_meets_the_slo(workload):
    slo = Slo(ttft_p95_ms=35)
    r = _search(workload, slo)
    c = r.best.candidate
    assert (c.layout.tp, c.replicas, c.gpus) == (8, 1, 8)
    plan = make_plan(MODEL, Deployment(tp_size=8), gpu="H200")
    again = evaluate(plan, workload, SimConfig(), c.replicas, c.router)
    assert again == r.best.outcome
    assert again.failures(slo, replicas=1) == ()
    assert again.ttft_p95_ms == pytest.approx(19.51873)
    # the 4-GPU layout fails by its TTFT, with the number
    first = r.trials[0]
    assert first.candidate.gpus == 4 and first.failures == ("TTFT p95 40.2 ms > 35 ms",)


def test_a_tighter_slo_never_needs_fewer_gpus(workload):
    gpus = [(_search(workload, Slo(ttft_p95_ms=x)).best.candidate.gpus)
            for x in (100, 35, 18)]
    assert gpus == [4, 8, 16]
    assert gpus == sorted(gpus)
    # a TPOT target tightens it as well: tp 4 decodes at 18.1 ms p95
    r = _search(workload, Slo(ttft_p95_ms=100, tpot_p95_ms=10))
    assert r.best.candidate.gpus == 8
    assert r.trials[0].failures == ("TPOT p95 18.11 ms > 10 ms",)


def test_an_slo_nothing_meets_lists_every_fleet_searched(workload):
    r = _search(workload, Slo(ttft_p95_ms=5), routers=(RouterKind.ROUND_ROBIN,),
                max_replicas=3)
    assert r.best is None
    assert r.replayed == 6 and r.not_needed == 0  # 2 layouts × 3 replica counts
    assert all(any(f.startswith("TTFT p95") for f in t.failures) for t in r.trials)


def test_cost_ranks_by_the_price_table_and_overrides_change_the_answer(workload):
    slo = Slo(ttft_p95_ms=35)
    default = _search(workload, slo, gpus=("H200", "B200"), objective=Objective.COST,
                      prices=price_table())
    assert default.best.candidate.describe() == "1 × B200 tp 4, round-robin"
    assert default.best.cost_usd_per_hour == pytest.approx(24.12)
    dear = _search(workload, slo, gpus=("H200", "B200"), objective=Objective.COST,
                   prices=price_table(["B200=20"]))
    assert dear.best.candidate.describe() == "1 × H200 tp 8, round-robin"
    assert dear.best.cost_usd_per_hour == pytest.approx(36.32)
    # by GPUs the B200 layout wins whatever it costs
    assert _search(workload, slo, gpus=("H200", "B200")).best.candidate.layout.gpu == "B200"


def test_a_load_no_replica_count_below_can_hold_is_ruled_out_without_a_replay():
    burst = load_workload(generator="shared-prompt", num_requests=120, seed=1, rate_per_s=120)
    r = _search(burst, Slo(ttft_p95_ms=10_000), tp_sizes=(4,),
                routers=(RouterKind.ROUND_ROBIN,))
    one = r.trials[0]
    busy = one.outcome.busy_replicas
    assert one.outcome.saturated and busy > 2
    ruled = [t for t in r.trials if t.outcome is None]
    assert [t.candidate.replicas for t in ruled] == list(range(2, math.ceil(busy)))
    assert ruled[0].failures[0].startswith(
        f"saturated (not replayed): at 1 replica the offered load keeps {busy:.2f}")
    assert r.best.candidate.replicas >= busy


def test_processes_give_the_serial_answer(workload):
    slo = Slo(ttft_p95_ms=18)
    serial = _search(workload, slo, routers=(RouterKind.ROUND_ROBIN, RouterKind.PREFIX_AWARE))
    parallel = _search(workload, slo, routers=(RouterKind.ROUND_ROBIN, RouterKind.PREFIX_AWARE),
                       runner=Processes(2))
    assert parallel.trials == serial.trials and parallel.best == serial.best


def test_failures_say_every_reason_with_its_numbers():
    o = Outcome(requests=10, finished=8, ttft_p95_ms=900.0, tpot_p95_ms=30.0, saturated=True,
                queue_grows=False, busy_replicas=2.5, token_hit_rate=0.0, usable_hit_rate=0.0)
    assert o.failures(Slo(ttft_p95_ms=500, tpot_p95_ms=20), replicas=2) == (
        "2 of 10 requests never finish",
        "saturated: the offered load keeps 2.50 replicas busy (2 replicas)",
        "TTFT p95 900.0 ms > 500 ms", "TPOT p95 30.00 ms > 20 ms")


def test_launch_lines_pack_replicas_onto_nodes_and_name_the_router():
    assert replica_commands("S", tp=8, replicas=2) == ("node0: S --port 30000",
                                                       "node1: S --port 30000")
    assert worker_urls(tp=2, replicas=5)[-1] == "http://node1:30000"
    cmd, _ = router_command(RouterKind.PREFIX_AWARE, tp=4, replicas=2)
    assert cmd == ("python -m sglang_router.launch_router --worker-urls http://node0:30000 "
                   "http://node0:30001 --policy cache_aware")
    assert router_command(RouterKind.STATE_AWARE, tp=4, replicas=2)[0] is None
    assert router_command(RouterKind.KV_AWARE, tp=4, replicas=2)[0].startswith(
        "python -m dynamo.frontend --router-mode kv")


@pytest.mark.parametrize(("text", "message"), [
    ("H200", "expected NAME=USD"), ("H200=abc", "is not a number"),
    ("H200=0", "expected a price in (0, 1000]"), ("Z99=3", "is not in the catalogue"),
])
def test_bad_prices_name_the_flag(text, message):
    with pytest.raises(ValueError, match="--gpu-price") as err:
        price_table([text])
    assert message in str(err.value)
