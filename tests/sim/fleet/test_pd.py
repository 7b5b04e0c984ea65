"""Prefill/decode disaggregation (`sim.fleet.pd`, `links`, `pd_compare`) and its command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvledger.cli import app
from kvledger.sglang.deploy import Deployment, DisaggMode
from kvledger.sglang.plan import make_plan
from kvledger.sim.config import SimConfig
from kvledger.sim.fleet.links import LINKS, LinkKind, request_bytes_per_rank
from kvledger.sim.fleet.pd import ReceivedKv, simulate_pd
from kvledger.sim.fleet.routers import RouterKind
from kvledger.sim.sources import load_workload
from kvledger.sim.timing import StepWork

TRACE = Path(__file__).resolve().parents[2] / "data" / "synthetic_trace.jsonl"
runner = CliRunner()


def _plans(tp=8):
    return tuple(make_plan("glm-5.3-flash", Deployment(tp_size=tp, disaggregation_mode=m),
                           gpu="H200") for m in (DisaggMode.PREFILL, DisaggMode.DECODE))


@pytest.fixture(scope="module")
def small():
    return load_workload(generator="shared-prompt", num_requests=120, seed=1, rate_per_s=15)


def test_the_hybrid_state_is_part_of_every_transfer():
    prefill, decode = _plans()
    cap = prefill.capacity
    assert (cap.token_bytes, cap.slot_bytes) == (12_716, 18_452_480)
    assert cap.slot_bytes * 8 == 147_619_840  # one state slot over the 8 ranks
    nbytes = request_bytes_per_rank(100, token_bytes=cap.token_bytes, slot_bytes=cap.slot_bytes)
    assert nbytes == 1_271_600 + 18_452_480
    # 19,724,080 B at 50 GB/s plus 10 µs
    assert LINKS[LinkKind.IB_400].transfer_ms(nbytes) == pytest.approx(0.4044816)
    assert LINKS[LinkKind.NVLINK].transfer_ms(nbytes) < LINKS[LinkKind.ROCE_100].transfer_ms(
        nbytes)


def test_every_request_is_served_once_after_its_prefill_and_transfer(small):
    prefill, decode = _plans()
    link = LINKS[LinkKind.IB_400]
    r = simulate_pd(prefill, decode, small, SimConfig(), prefill_replicas=1,
                    decode_replicas=1, router=RouterKind.PREFIX_AWARE, link=link)
    assert sorted(rec.rid for rec in r.records) == [q.rid for q in small.requests]
    first = {rec.rid: rec.first_token_ms for res in r.prefill.replicas for rec in res.requests}
    by_rid = {q.rid: q for q in small.requests}
    for rec in r.records:
        q = by_rid[rec.rid]
        moved = link.transfer_ms(request_bytes_per_rank(
            q.prompt_tokens, token_bytes=12_716, slot_bytes=18_452_480))
        assert rec.first_token_ms >= first[rec.rid] + moved - 1e-9
        assert rec.arrival_ms == q.arrival_ms and rec.output_tokens == q.output_tokens
    assert r.transfer_bytes == sum(
        8 * (q.prompt_tokens * 12_716 + 18_452_480) for q in small.requests)
    # the prefill servers computed every prompt; the decode servers none of it
    assert sum(res.summary.counters.prefill_tokens for res in r.prefill.replicas) > 0
    assert sum(res.summary.counters.hit_tokens for res in r.decode.replicas) == 0


def test_receiving_kv_costs_the_decode_server_no_compute():
    prefill, _ = _plans()
    from kvledger.sim.setup import step_timer

    inner, _ = step_timer(prefill, SimConfig())
    timer = ReceivedKv(inner)
    assert timer.step_ms(StepWork(prefill_spans=((0, 8192),))) == 0.0
    mixed = StepWork(prefill_spans=((0, 8192),), decode_contexts=(1000, 2000))
    assert timer.step_ms(mixed) == inner.step_ms(StepWork(decode_contexts=(1000, 2000)))


def test_different_tp_per_role_is_refused(small):
    prefill, _ = _plans(tp=8)
    _, decode = _plans(tp=4)
    with pytest.raises(ValueError, match="both roles take the same --tp"):
        simulate_pd(prefill, decode, small, prefill_replicas=1, decode_replicas=1,
                    router=RouterKind.ROUND_ROBIN, link=LINKS[LinkKind.IB_400])


def _pd_doc(*args: str) -> dict:
    result = runner.invoke(app, ["simulate", "--gpu", "H200", "--tp", "8", "--no-progress",
                                 "--json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_on_a_light_load_pd_costs_both_ttft_and_tpot():
    doc = _pd_doc("--workload", "shared-prompt", "--num-requests", "120", "--rate", "15",
                  "--seed", "1", "--prefill-replicas", "1", "--decode-replicas", "1",
                  "--router", "prefix-aware")
    assert doc["schema"] == "kvledger.simulate-pd/1"
    assert (doc["disaggregated"]["gpus"], doc["aggregated"]["gpus"]) == (16, 16)
    assert doc["aggregated"]["replicas"] == "2 aggregated"
    pd, agg = doc["disaggregated"]["latency"], doc["aggregated"]["latency"]
    assert pd["ttft_ms"]["p95"] == pytest.approx(24.573114)
    assert agg["ttft_ms"]["p95"] == pytest.approx(16.644393)
    assert {v["pd"] for v in doc["verdict"]} == {"costs"}
    assert doc["link"]["kind"] == "ib-400"


def test_on_the_shared_trace_pd_pays_on_the_tpot_tail_and_costs_ttft():
    doc = _pd_doc("--trace", str(TRACE), "--num-requests", "600", "--prefill-replicas", "1",
                  "--decode-replicas", "1", "--router", "prefix-aware", "--link", "nvlink")
    verdict = {v["metric"]: v["pd"] for v in doc["verdict"]}
    assert verdict["TPOT p95 ms"] == verdict["TPOT p99 ms"] == "pays"
    assert verdict["TTFT p95 ms"] == "costs"
    assert doc["disaggregated"]["finished"] == doc["aggregated"]["finished"] == 600


@pytest.mark.parametrize(("args", "message"), [
    (("--prefill-replicas", "1"), "--prefill-replicas/--decode-replicas: give both"),
    (("--prefill-replicas", "1", "--decode-replicas", "1", "--replicas", "2"),
     "--replicas: aggregated replicas"),
    (("--link", "ib-400"), "--link: needs --prefill-replicas and --decode-replicas"),
    (("--prefill-replicas", "0", "--decode-replicas", "1"), "--prefill-replicas 0: expected"),
    (("--prefill-replicas", "1", "--decode-replicas", "1", "--disaggregation-mode", "prefill"),
     "plan each role themselves"),
    (("--prefill-replicas", "1", "--decode-replicas", "1", "--compare"), "runs on its own"),
])
def test_bad_pd_input_is_one_error_line_and_exit_2(args, message):
    result = runner.invoke(app, ["simulate", "--workload", "shared-prompt", "--num-requests",
                                 "20", "--gpu", "H200", "--tp", "8", "--no-progress", *args])
    assert result.exit_code == 2, result.output
    assert message in result.output
