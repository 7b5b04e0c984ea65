"""`simulate --compare` and the state-policy / time-model flags at the CLI boundary."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kvledger.cli import app
from kvledger.report.policy_compare import COMPARE_PAIRS

runner = CliRunner()
SMALL = ("--workload", "shared-prompt", "--num-requests", "60", "--no-progress")


def invoke(*args: str):
    return runner.invoke(app, ["simulate", *args])


def test_compare_json_has_every_pair_then_the_ceiling(tmp_path):
    result = invoke(*SMALL, "--compare", "--figure-dir", str(tmp_path), "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    labels = [row["policy"] for row in doc["rows"]]
    assert labels[:-1] == [f"{a.value} + {e.value}" for a, e in COMPARE_PAIRS]
    assert labels[-1].startswith("FULL-only ceiling")
    ceiling = doc["rows"][-1]["usable_hit"]
    assert all(row["usable_hit"] <= ceiling + 1e-12 for row in doc["rows"])
    assert sorted(p.rsplit("/", 1)[-1] for p in doc["figures"]) == ["policies.png",
                                                                     "policies.svg"]


def test_compare_table_renders():
    result = invoke(*SMALL, "--compare")
    assert result.exit_code == 0, result.output
    assert "FULL-only ceiling" in result.output and "ghost-branch" in result.output


def test_figure_dir_needs_compare(tmp_path):
    result = invoke(*SMALL, "--figure-dir", str(tmp_path))
    assert result.exit_code != 0
    assert "--figure-dir: needs --compare" in result.output


def test_policy_flags_reach_the_summary():
    result = invoke(*SMALL, "--state-admission", "marconi", "--state-eviction",
                    "keep-junctions", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["checkpoints"]["policies"] == "marconi + keep-junctions"


def test_linear_time_flags_replace_the_roofline():
    result = invoke(*SMALL, "--step-overhead-ms", "5", "--json")
    doc = json.loads(result.output)
    assert doc["latency"]["model"].startswith("linear: 5 ms per step")
    roof = json.loads(invoke(*SMALL, "--time-gpu", "b200", "--json").output)
    assert roof["latency"]["model"].startswith("roofline on B200")


def test_bad_efficiency_names_the_flag():
    result = invoke(*SMALL, "--hbm-efficiency", "1.5")
    assert result.exit_code != 0
    assert "--hbm-efficiency" in result.output


def test_slot_economy_json_reports_the_freed_slots_and_both_runs():
    # A tight memory where state slots bind: the what-if evicts fewer states.
    result = invoke(*SMALL, "--available-gib", "10", "--kv-cache-dtype", "fp8_e4m3",
                    "--slot-economy", "shared-track=4", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["schema"] == "kvledger.simulate-slot-economy/1"
    assert doc["label"].startswith("what-if")
    assert doc["state_policies"] == "engine + lru"
    n, k = doc["running_requests"], doc["state_slots"]
    assert doc["pinned_today_slots"] == 3 * n and doc["pinned_shared_slots"] == n + 4
    assert (k, n, doc["freed_slots"]) == (33, 6, 8)  # 2 · 6 track slots less a pool of 4
    engine, shared = doc["runs"]["engine"], doc["runs"]["shared-track"]
    assert (engine["evicted_slots"], shared["evicted_slots"]) == (85, 77)
    assert engine["usable_hit_rate"] == pytest.approx(0.5366, abs=1e-4)
    assert shared["usable_hit_rate"] == pytest.approx(0.5950, abs=1e-4)
    assert shared["token_hit_rate"] == engine["token_hit_rate"]  # KV room is unchanged


def test_slot_economy_composes_with_the_best_policy():
    # ghost-branch + flop-aware already evicts fewer states; the shared pool's 8 freed slots
    # take usable hit to this workload's saturation, 143,808 of 215,977 prompt tokens (every
    # state-backed reuse; the same as the engine's run at 30 GiB).
    result = invoke(*SMALL, "--available-gib", "10", "--kv-cache-dtype", "fp8_e4m3",
                    "--slot-economy", "shared-track=4", "--state-admission", "ghost-branch",
                    "--state-eviction", "flop-aware", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["state_policies"] == "ghost-branch + flop-aware" and doc["freed_slots"] == 8
    engine, shared = doc["runs"]["engine"], doc["runs"]["shared-track"]
    assert (engine["evicted_slots"], shared["evicted_slots"]) == (43, 34)
    assert engine["usable_hit_rate"] == pytest.approx(0.6258, abs=1e-4)
    assert shared["usable_hit_rate"] == pytest.approx(143_808 / 215_977, abs=1e-9)


def test_slot_economy_input_errors():
    bad = invoke(*SMALL, "--slot-economy", "pooled")
    assert bad.exit_code == 2 and "--slot-economy pooled: expected shared-track" in bad.output
    both = invoke(*SMALL, "--slot-economy", "shared-track", "--compare")
    assert both.exit_code == 2 and "runs on its own" in both.output
    dense = invoke(*SMALL, "--model", "llama-3.1-8b", "--slot-economy", "shared-track")
    assert dense.exit_code == 2 and "has no state slots" in dense.output
