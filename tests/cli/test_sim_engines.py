"""`kvledger simulate --engine vllm` and `--engine sglang,vllm` through the real CLI: both
engines on one trace and one deployment's memory (the plans `plan --engine sglang,vllm`
gives), SGLang's side the same run as plain `simulate`, and bad input exiting 2 with one error
line naming the flag."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvledger.cli import app
from kvledger.core.engines import Engine
from kvledger.sizing.flag_plans import PlanAsk, plans_from_flags

runner = CliRunner()
TRACE = str(Path(__file__).resolve().parents[1] / "data" / "synthetic_trace.jsonl")
# Qwen3-Next at TP 2 on an H200: a hybrid whose states span 3 Mamba groups in vLLM
BASE = ("simulate", "--trace", TRACE, "--num-requests", "60", "--no-progress", "--json",
        "--model", "qwen3-next-80b-a3b-instruct", "--gpu", "h200", "--tp", "2")


def invoke(*args: str):
    return runner.invoke(app, [*BASE, *args])


def _without_wall(body: dict) -> dict:
    return {**body, "time": {k: v for k, v in body["time"].items() if k != "wall_s"}}


@pytest.fixture(scope="module")
def both() -> dict:
    result = invoke("--engine", "sglang,vllm")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.slow  # two serving runs of 60 requests: several seconds
def test_both_engines_share_the_trace_and_the_deployment_memory(both):
    assert both["schema"] == "kvledger.simulate-engines/1"
    sglang, vllm = both["engines"]["sglang"], both["engines"]["vllm"]
    (_, vplan), _ = plans_from_flags(["--tp", "2"], (Engine.SGLANG, Engine.VLLM),
                                     PlanAsk(model="qwen3-next-80b-a3b-instruct", gpu="h200"))
    assert vllm["pools"]["num_blocks"] == vplan.capacity.num_blocks
    assert vllm["pools"]["block_tokens"] == vplan.layout.block_tokens
    assert vllm["pools"]["state_blocks"] == 3  # 36 GDN layers in groups of 12
    assert sglang["requests"]["offered"] == vllm["requests"]["offered"] == 60
    rows = {r["engine"]: r for r in both["comparison"]}
    for name, body in (("sglang", sglang), ("vllm", vllm)):
        assert rows[name]["token_hit"] == body["rates"]["token_hit"]
        assert rows[name]["usable_hit"] == body["rates"]["usable_hit"]
        assert rows[name]["ttft_p95_ms"] == body["latency"]["ttft_ms"]["p95"]
        assert rows[name]["finished"] == body["requests"]["finished"] == 60
        assert body["latency"]["model"].startswith("roofline on H200")
    assert vllm["tokens"]["usable_hit"] <= vllm["tokens"]["hit"] <= vllm["tokens"]["prompt"]


@pytest.mark.slow  # two serving runs of 60 requests: several seconds
def test_sglangs_side_is_plain_simulates_run(both):
    plain = invoke()
    assert plain.exit_code == 0, plain.output
    doc = json.loads(plain.stdout)
    body = {k: v for k, v in doc.items()
            if k not in ("schema", "kvledger_version", "ignored_flags", "notes", "csv",
                         "overload")}  # the one-rank overload verdict: plain `simulate` only
    body["latency"] = {k: v for k, v in body["latency"].items() if k != "saturated"}
    sglang = {k: v for k, v in both["engines"]["sglang"].items() if k != "csv"}
    assert _without_wall(sglang) == _without_wall(body)


@pytest.mark.slow  # two serving runs of 60 requests: several seconds
def test_vllm_alone_is_the_vllm_side_of_the_comparison(both):
    result = runner.invoke(app, [*BASE[:-2], "--engine", "vllm", "--tensor-parallel-size", "2"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["schema"] == "kvledger.simulate-vllm/1"
    body = {k: v for k, v in doc.items()
            if k not in ("schema", "kvledger_version", "ignored_flags", "notes")}
    assert _without_wall(body) == _without_wall(both["engines"]["vllm"])
    assert any("async scheduler: two steps in flight" in n for n in doc["notes"])


@pytest.mark.slow  # two serving runs of 60 requests: several seconds
def test_the_table_names_both_engines():
    result = runner.invoke(app, [a for a in BASE if a != "--json"] + ["--engine", "sglang,vllm"])
    assert result.exit_code == 0, result.output
    assert "sglang" in result.stdout and "vllm" in result.stdout and "TTFT" in result.stdout


def test_vllm_alone_reports_vllms_pool_and_the_shared_metric_names():
    result = runner.invoke(app, ["simulate", "--trace", TRACE, "--num-requests", "15",
                                 "--no-progress", "--json", "--model",
                                 "qwen3-next-80b-a3b-instruct", "--gpu", "h200", "--engine",
                                 "vllm", "--tensor-parallel-size", "2",
                                 "--max-num-batched-tokens", "2048", "--scheduler", "sync"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["schema"] == "kvledger.simulate-vllm/1"
    assert doc["pools"]["max_num_batched_tokens"] == 2048
    assert doc["pools"]["max_num_seqs"] == 1024  # vLLM's default on an H200
    assert doc["requests"]["finished"] == 15
    assert any("sync scheduler: one step in flight" in n for n in doc["notes"])
    assert set(doc["rates"]) == {"token_hit", "usable_hit"}
    assert set(doc["evictions"]) >= {"full_kv_tokens", "mamba_states"}
    assert doc["latency"]["ttft_ms"]["p50"] > 0 and doc["latency"]["tpot_ms"]["p50"] > 0


@pytest.mark.parametrize(("args", "flag"), [
    (("--engine", "trtllm"), "--engine 'trtllm'"),
    (("--engine", "sglang,sglang"), "--engine 'sglang,sglang'"),
    (("--engine", "sglang,vllm", "--compare"), "--compare"),
    (("--engine", "vllm", "--compare", "--csv", "x.csv"), "--csv"),
    (("--engine", "vllm", "--slot-economy", "shared-track"), "--slot-economy"),
    (("--engine", "vllm", "--chunked-prefill-size", "4096"), "--chunked-prefill-size"),
    (("--engine", "vllm", "--max-num-batched-tokens", "0"), "--max-num-batched-tokens 0"),
    (("--max-num-batched-tokens", "4096"), "--max-num-batched-tokens"),
    (("--scheduler", "sync"), "--scheduler sync"),
    (("--engine", "sglang,vllm", "--available-gib", "40"), "--available-gib"),
])
def test_bad_input_exits_2_naming_the_flag(args, flag):
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and flag in lines[0], lines


@pytest.mark.slow  # two serving runs of 200 requests: several seconds
def test_a_run_whose_queue_grows_is_flagged_saturated_for_each_engine(both):
    # At the trace's own rate 60 requests drain; 200 arriving 100× faster build a backlog
    # on both engines (`sim.fleet.capacity.queue_grows`, the fleet issue's overload rule).
    assert [(r["engine"], r["saturated"]) for r in both["comparison"]] == [
        ("sglang", False), ("vllm", False)]
    assert both["engines"]["vllm"]["latency"]["saturated"] is False
    args = [a for a in BASE if a not in ("--json", "60")]
    args[args.index("--num-requests")] = "--num-requests=200"
    fast = runner.invoke(app, [*args, "--engine", "sglang,vllm", "--time-scale", "0.01"])
    assert fast.exit_code == 0, fast.output
    assert "sglang (saturated)" in fast.stdout and "vllm (saturated)" in fast.stdout
    assert "measure the backlog" in " ".join(fast.stdout.split())
