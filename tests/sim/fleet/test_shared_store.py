"""A store tier shared by a fleet (`sim.fleet.shared_store`) and `simulate --l3-shared`."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvledger.cache.store_tier import StoreStats
from kvledger.cli import app
from kvledger.sglang.deploy import Deployment
from kvledger.sglang.plan import make_plan
from kvledger.sim.config import SimConfig
from kvledger.sim.fleet.routers import RouterKind
from kvledger.sim.fleet.run import simulate_fleet
from kvledger.sim.fleet.shared_store import StoreView
from kvledger.sim.fleet.store_reuse import store_reuse
from kvledger.sim.l3 import L3Config
from kvledger.sim.sources import load_workload
from kvledger.sim.workload import Request, Workload
from kvledger.store.backend import BackendKind

TRACE = Path(__file__).resolve().parents[2] / "data" / "synthetic_trace.jsonl"
runner = CliRunner()
PLAN = make_plan("glm-5.3-flash", Deployment(tp_size=8), gpu="H200")
STORE = SimConfig(l3=L3Config(capacity_bytes=64 * 2**30, backend=BackendKind.MOONCAKE))
# one 8,192-token prompt, then the same prompt plus 64 tokens 5 s later: round-robin sends
# them to different replicas
TWO = Workload(name="two", requests=(
    Request(rid=0, arrival_ms=0.0, segment_ids=(1,), segment_tokens=(8192,), output_tokens=4),
    Request(rid=1, arrival_ms=5000.0, segment_ids=(1, 2), segment_tokens=(8192, 64),
            output_tokens=4)))


def _fleet(shared: bool):
    return simulate_fleet(PLAN, TWO, STORE, replicas=2, router=RouterKind.ROUND_ROBIN,
                          shared_store=shared)


def test_a_prefix_one_replica_wrote_is_restored_on_another():
    private, shared = _fleet(False), _fleet(True)
    assert [r.summary.counters.hit_tokens for r in private.replicas] == [0, 0]
    second = shared.replicas[1].summary
    assert (second.counters.hit_tokens, second.store.restores, second.store.restored_tokens) \
        == (8192, 1, 8192)
    assert shared.replicas[0].summary.store.restores == 0
    # both replicas see the one store: its two groups (replica 0's prompt, replica 1's)
    assert [r.summary.store.put_groups for r in shared.replicas] == [2, 2]
    # the read is slower than computing 8,192 tokens again at this store's bandwidth
    ttft = [r.requests[0].first_token_ms - r.requests[0].arrival_ms for r in shared.replicas]
    again = private.replicas[1].requests[0]
    assert ttft[1] == pytest.approx(91.228, abs=1e-3)
    assert again.first_token_ms - again.arrival_ms == pytest.approx(39.963, abs=1e-3)


def test_each_view_keeps_its_own_share_of_the_shared_counters():
    fleet = simulate_fleet(PLAN, load_workload(trace=TRACE, num_requests=300), STORE,
                           replicas=3, router=RouterKind.ROUND_ROBIN, shared_store=True)
    views = [r.summary.store for r in fleet.replicas]
    assert sum(v.restores for v in views) > 0
    assert len({v.put_groups for v in views}) == 1  # the shared store's own count


def test_view_forwards_and_counts_deltas():
    class Tier:
        def __init__(self):
            self.stats = StoreStats()

        def prefetch(self, cache, keys):
            self.stats.restored_pages += 3
            self.stats.read_wait_ms += 1.5
            return 3

    tier = Tier()
    a, b = StoreView(tier), StoreView(tier)
    assert a.prefetch(None, None) == 3 and b.prefetch(None, None) == 3
    a.prefetch(None, None)
    assert (a.stats.restored_pages, b.stats.restored_pages, tier.stats.restored_pages) == (
        6, 3, 9)
    assert a.stats.read_wait_ms == 3.0
    assert {f.name for f in fields(StoreStats)} >= {"restored_pages", "read_wait_ms"}


def test_reuse_with_one_shared_tier_beats_private_tiers_of_the_same_total():
    w = load_workload(trace=TRACE, num_requests=1500)
    config = SimConfig(l3=L3Config(capacity_bytes=512 * 2**30, backend=BackendKind.MOONCAKE))
    rows, _ = store_reuse(PLAN, w, config, replicas=4, router=RouterKind.ROUND_ROBIN)
    assert [r.label for r in rows] == ["no store tier", "4 private tiers of 128 GiB",
                                       "one shared tier of 512 GiB"]
    none, private, shared = rows
    assert none.token_hit_rate == pytest.approx(0.066700, abs=1e-6)
    assert private.restored_tokens == 0  # each replica's device still holds its own prefixes
    assert shared.token_hit_rate == pytest.approx(0.221846, abs=1e-6)
    assert shared.restored_tokens == 2_751_296


def test_cli_adds_the_reuse_rows_to_the_fleet_document():
    result = runner.invoke(app, ["simulate", "--trace", str(TRACE), "--num-requests", "300",
                                 "--gpu", "H200", "--tp", "8", "--replicas", "3",
                                 "--l3-size", "256", "--l3-shared", "--json", "--no-progress"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["schema"] == "kvledger.simulate-fleet/1"
    labels = [r["store"] for r in doc["store_reuse"]]
    assert labels[-1] == "one shared tier of 256 GiB" and len(labels) == 3
    shared = doc["store_reuse"][-1]
    assert doc["fleet"]["rates"]["token_hit"] == pytest.approx(shared["token_hit"], abs=1e-6)


@pytest.mark.parametrize(("args", "message"), [
    (("--l3-shared",), "--l3-shared: a store tier shared by replicas; needs --replicas R"),
    (("--replicas", "2", "--l3-shared"), "--l3-shared: needs --l3-size GiB"),
])
def test_bad_shared_store_input_exits_2(args, message):
    result = runner.invoke(app, ["simulate", "--workload", "shared-prompt", "--num-requests",
                                 "20", "--no-progress", *args])
    assert result.exit_code == 2, result.output
    assert message in result.output
