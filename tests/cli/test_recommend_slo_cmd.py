"""`kvledger recommend --trace/--workload … --ttft-p95-ms X` through the real CLI.

The decisive check: the `simulate` command the recommendation prints, run on its own, meets
the SLO unsaturated.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvledger.cli import app

runner = CliRunner()
WORKLOAD = ("--workload", "shared-prompt", "--num-requests", "120", "--rate", "15", "--seed",
            "1")
TRACE = Path(__file__).resolve().parents[1] / "data" / "synthetic_trace.jsonl"


def recommend(*args: str):
    return runner.invoke(app, ["recommend", *WORKLOAD, "--host-tier", "off", "--no-progress",
                               *args])


def doc_of(*args: str) -> dict:
    result = recommend(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_json_is_one_envelope_and_its_simulate_command_meets_the_slo():
    doc = doc_of("--ttft-p95-ms", "35")
    assert list(doc)[:4] == ["schema", "kvledger_version", "ignored_flags", "notes"]
    assert doc["schema"] == "kvledger.recommend-slo/1"
    best = doc["best"]
    assert (best["gpu"], best["tp"], best["replicas"], best["gpus"]) == ("H200", 8, 1, 8)
    assert best["commands"]["replicas"] == [
        "node0: python -m sglang.launch_server --model-path zai-org/GLM-5.3-Flash --tp-size 8 "
        "--port 30000"]
    words = shlex.split(best["commands"]["simulate"])
    assert words[:2] == ["kvledger", "simulate"]
    confirm = runner.invoke(app, [*words[1:], "--json", "--no-progress"])
    assert confirm.exit_code == 0, confirm.output
    sim = json.loads(confirm.stdout)
    assert sim["fleet"]["latency"]["ttft_ms"]["p95"] <= 35
    assert sim["fleet"]["latency"]["ttft_ms"]["p95"] == pytest.approx(
        best["measured"]["ttft_p95_ms"], abs=1e-3)
    assert sim["overload"]["saturated"] is False
    # every smaller fleet is listed with why it fails
    assert doc["rejected"][0]["gpus"] == 4
    assert doc["rejected"][0]["why"] == ["TTFT p95 40.2 ms > 35 ms"]
    assert doc["searched"] == {"layouts": 4, "replayed": 8, "ruled_out": 0, "not_needed": 78}


def test_a_tighter_slo_needs_at_least_as_many_gpus():
    gpus = [doc_of("--ttft-p95-ms", x, "--routers", "round-robin,prefix-aware")["best"]["gpus"]
            for x in ("100", "35", "18")]
    assert gpus == [4, 8, 16]


def test_the_table_prints_the_launch_commands_and_the_router():
    result = recommend("--ttft-p95-ms", "18", "--routers", "prefix-aware")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Chosen fleet" in out and "meets (chosen)" in out
    assert "node1: python -m sglang.launch_server" in out
    assert "--policy cache_aware" in out  # 2 × tp 8 behind SGLang's cache-aware router
    assert "confirm: kvledger simulate" in out


def test_pd_splits_win_a_tpot_target_aggregated_fleets_miss():
    result = runner.invoke(app, ["recommend", "--trace", str(TRACE), "--num-requests", "600",
                                 "--ttft-p95-ms", "300", "--tpot-p95-ms", "1.9", "--pd",
                                 "--host-tier", "off", "--routers", "prefix-aware",
                                 "--max-replicas", "2", "--no-progress", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    best = doc["best"]
    assert (best["tp"], best["prefill_replicas"], best["decode_replicas"], best["gpus"]) == (
        8, 1, 1, 16)
    # the aggregated fleet on the same 16 GPUs misses the TPOT target
    same = [r for r in doc["rejected"] if r["gpus"] == 16 and r["prefill_replicas"] is None]
    assert [r["why"] for r in same] == [["TPOT p95 2.13 ms > 1.9 ms"]]
    cmds = best["commands"]
    assert cmds["replicas"][0].endswith("--disaggregation-mode prefill --port 30000")
    assert cmds["router"] == ("python -m sglang_router.launch_router --pd-disaggregation "
                              "--prefill http://node0:30000 --decode http://node1:30000")
    words = shlex.split(cmds["simulate"])
    confirm = runner.invoke(app, [*words[1:], "--json", "--no-progress"])
    assert confirm.exit_code == 0, confirm.output
    pd = json.loads(confirm.stdout)["disaggregated"]
    assert pd["latency"]["ttft_ms"]["p95"] <= 300 and pd["latency"]["tpot_ms"]["p95"] <= 1.9
    assert pd["saturated"] is False


def test_gpu_price_ranks_by_cost():
    doc = doc_of("--ttft-p95-ms", "35", "--gpu", "H200,B200", "--gpu-price", "B200=20")
    assert doc["objective"] == "cost"
    assert doc["prices_usd_per_gpu_hour"] == {"H200": 4.54, "B200": 20.0}
    assert (doc["best"]["gpu"], doc["best"]["cost_usd_per_hour"]) == ("H200", 36.32)


def test_jobs_2_gives_the_serial_document():
    args = ("--ttft-p95-ms", "18", "--routers", "round-robin,kv-aware")
    assert doc_of(*args, "--jobs", "2") == doc_of(*args)


def test_nothing_meets_exits_1_with_the_reasons():
    result = recommend("--ttft-p95-ms", "5", "--routers", "round-robin", "--max-replicas", "2")
    assert result.exit_code == 1
    assert "No fleet searched meets the SLO" in result.stdout
    assert "TTFT p95" in result.stdout


def test_the_shared_trace_is_sized():
    result = runner.invoke(app, ["recommend", "--trace", str(TRACE), "--num-requests", "400",
                                 "--ttft-p95-ms", "500", "--host-tier", "off", "--routers",
                                 "round-robin", "--no-progress", "--json"])
    assert result.exit_code == 0, result.output
    best = json.loads(result.stdout)["best"]
    assert best["measured"]["ttft_p95_ms"] <= 500 and not best["measured"]["saturated"]
    assert best["commands"]["simulate"].startswith(f"kvledger simulate --trace {TRACE} "
                                                   "--num-requests 400 --gpu H200")


@pytest.mark.parametrize(("args", "message"), [
    ((), "--trace/--workload: give the SLO to size for, --ttft-p95-ms X"),
    (("--ttft-p95-ms", "0"), "--ttft-p95-ms 0: expected a finite number in (0,"),
    (("--ttft-p95-ms", "50", "--routers", "fastest"), "'fastest' is not a router"),
    (("--ttft-p95-ms", "50", "--gpu-price", "H200"), "expected NAME=USD"),
    (("--ttft-p95-ms", "50", "--gpu", "H100", "--objective", "cost"),
     "--gpu H100: no price to rank it by cost"),
    (("--ttft-p95-ms", "50", "--requests", "8"), "--requests/--context: a concurrency check"),
    (("--ttft-p95-ms", "50", "--engine", "vllm"), "fleets are of SGLang replicas"),
    (("--ttft-p95-ms", "50", "--host-tier", "maybe"), "--host-tier maybe: expected off, on"),
    (("--ttft-p95-ms", "50", "--max-replicas", "0"), "--max-replicas 0: expected a positive"),
    (("--ttft-p95-ms", "50", "--top", "3"), "--top: an option of recommend --requests/--context"),
    (("--ttft-p95-ms", "50", "--weights-gib", "40"), "--weights-gib: an option of recommend"),
    (("--ttft-p95-ms", "50", "--link", "nvlink"), "--link: the prefill→decode link; needs --pd"),
    (("--ttft-p95-ms", "50", "--gpu-memory-utilization", "0.9"),
     "--gpu-memory-utilization: an option of recommend --requests/--context"),
])
def test_bad_input_is_one_error_line_and_exit_2(args, message):
    result = runner.invoke(app, ["recommend", *WORKLOAD, "--no-progress", *args])
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_slo_options_without_a_workload_are_refused():
    result = runner.invoke(app, ["recommend", "--requests", "8", "--context", "4096",
                                 "--ttft-p95-ms", "50"])
    assert result.exit_code == 2
    assert "--ttft-p95-ms: sizes a fleet for a workload; needs --trace or --workload" \
        in result.output
    result = runner.invoke(app, ["recommend", "--gpu", "H200"])
    assert result.exit_code == 2
    assert "give --requests R and --context C" in result.output
