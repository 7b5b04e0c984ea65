"""`kvledger simulate --replicas R --router P` through the real CLI."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kvledger.cli import app

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, ["simulate", "--workload", "shared-prompt", "--num-requests", "40",
                               "--no-progress", *args])


def test_fleet_json_is_one_envelope_with_replicas_and_the_verdict():
    result = invoke("--replicas", "2", "--router", "state-aware", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert list(doc)[:4] == ["schema", "kvledger_version", "ignored_flags", "notes"]
    assert doc["schema"] == "kvledger.simulate-fleet/1"
    assert (doc["router"], doc["replicas"], doc["fleet"]["requests"]) == ("state-aware", 2, 40)
    assert sum(r["requests"] for r in doc["per_replica"]) == 40
    assert doc["overload"]["saturated"] is doc["fleet"]["latency"]["saturated"] is False
    rates = doc["fleet"]["rates"]
    assert 0 <= rates["usable_hit"] <= rates["token_hit"] <= 1


def test_rate_scale_compresses_arrivals():
    slow = json.loads(invoke("--replicas", "2", "--json").stdout)
    fast = json.loads(invoke("--replicas", "2", "--rate-scale", "4", "--json").stdout)
    # four times the rate: the same work offered in a quarter of the span
    ratio = (fast["overload"]["offered_prefill_tokens_per_s"]
             / slow["overload"]["offered_prefill_tokens_per_s"])
    assert ratio == pytest.approx(4, rel=0.05)
    assert "(rate ×4)" in fast["workload"]


def test_table_names_the_router_and_the_fleet_row():
    result = invoke("--replicas", "3", "--router", "prefix-aware")
    assert result.exit_code == 0, result.output
    assert "router prefix-aware" in result.stdout and "fleet" in result.stdout
    assert "offered load" in result.stdout


@pytest.mark.parametrize(("args", "message"), [
    (("--router", "kv-aware"), "--router/--rate-scale: need --replicas R"),
    (("--replicas", "0"), "--replicas 0: expected a positive integer"),
    (("--replicas", "300"), "--replicas 300: expected a positive integer (at most 256)"),
    (("--replicas", "2", "--rate-scale", "0"), "--rate-scale 0: expected a finite number in (0, 1,000,000]"),
    (("--replicas", "2", "--compare"), "--replicas: runs on its own"),
    (("--replicas", "2", "--engine", "vllm"), "--replicas: fleets are of SGLang replicas"),
])
def test_bad_fleet_input_is_one_error_line_and_exit_2(args, message):
    result = invoke(*args)
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1].startswith("error: ")
    assert message in result.output


def test_a_single_rank_run_says_its_load_too():
    doc = json.loads(invoke("--json").stdout)
    assert doc["schema"] == "kvledger.simulate/2"
    o = doc["overload"]
    assert o["saturated"] is doc["latency"]["saturated"] is False
    assert o["replicas_needed"] == 1 and 0 < o["busy_replicas"] < 1
    assert o["replica_prefill_tokens_per_s"] > o["offered_prefill_tokens_per_s"]


def test_a_saturated_single_rank_run_is_labelled():
    """The shared synthetic trace at 100 times its rate: far more prefill than one rank
    serves."""
    result = runner.invoke(app, ["simulate", "--trace", "tests/data/synthetic_trace.jsonl",
                                 "--num-requests", "400", "--time-scale", "0.01",
                                 "--no-progress", "--json"])
    doc = json.loads(result.stdout)
    assert doc["overload"]["saturated"] is doc["latency"]["saturated"] is True
    assert doc["overload"]["replicas_needed"] > 1
