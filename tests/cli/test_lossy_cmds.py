"""`simulate --lossy-checkpoints` and `verify --lossy-checkpoints`: the labelled lossy what-if."""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace

import pytest
from typer.testing import CliRunner

from kvledger.cache.policies.lossy_states import LossyCheckpoints
from kvledger.cli import app

runner = CliRunner()
SMALL = ("simulate", "--workload", "shared-prompt", "--num-requests", "60", "--no-progress")
TIGHT = ("--available-gib", "10", "--kv-cache-dtype", "fp8_e4m3")


def test_simulate_json_reports_the_slots_gained_and_both_runs():
    result = runner.invoke(app, [*SMALL, *TIGHT, "--lossy-checkpoints", "int8", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["schema"] == "kvledger.simulate-lossy-checkpoints/1"
    assert doc["label"].startswith("what-if (lossy, not bit-exact)")
    assert (doc["lossy"], doc["bit_exact"], doc["checkpoints"]) == (True, False, "int8")
    # GLM-5.3-Flash at 10 GiB, fp8 KV: K 33, N 6 × 3 held = 18 pinned, 15 cached slots of
    # 147,619,840 B = 2,214,297,600 B hold ⌊2,214,297,600 / 39,272,856⌋ = 56 checkpoints
    assert (doc["state_slots"], doc["pinned_slots"], doc["cache_full_slots"]) == (33, 18, 15)
    assert (doc["slot_bytes"], doc["checkpoint_slot_bytes"]) == (147_619_840, 39_272_856)
    assert (doc["cache_lossy_slots"], doc["gained_slots"]) == (56, 41)
    full, lossy = doc["runs"]["full-precision"], doc["runs"]["int8"]
    assert (full["evicted_slots"], lossy["evicted_slots"]) == (85, 44)
    assert full["usable_hit_rate"] == pytest.approx(0.5366, abs=1e-4)
    assert lossy["usable_hit_rate"] == pytest.approx(0.6658, abs=1e-4)
    assert lossy["token_hit_rate"] == full["token_hit_rate"]  # KV room is unchanged


def test_fp8_gains_the_same_slots_and_the_policies_are_named():
    result = runner.invoke(app, [*SMALL, *TIGHT, "--lossy-checkpoints", "fp8", "--state-admission",
                                 "ghost-branch", "--state-eviction", "flop-aware", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["gained_slots"] == 41 and doc["label"].endswith("(fp8)")
    assert doc["state_policies"] == "ghost-branch + flop-aware"
    assert set(doc["runs"]) == {"full-precision", "fp8"}


def test_simulate_table_is_labelled():
    result = runner.invoke(app, [*SMALL, *TIGHT, "--lossy-checkpoints", "int8"])
    assert result.exit_code == 0, result.output
    assert "what-if (lossy, not bit-exact)" in result.output
    assert "int8 checkpoints (what-if, lossy)" in result.output
    assert "41 slots gained" in result.output


def test_simulate_input_errors():
    bad = runner.invoke(app, [*SMALL, "--lossy-checkpoints", "int4"])
    assert bad.exit_code == 2 and "--lossy-checkpoints" in bad.output
    both = runner.invoke(app, [*SMALL, "--lossy-checkpoints", "int8", "--compare"])
    assert both.exit_code == 2 and "--lossy-checkpoints: runs on its own" in both.output
    dense = runner.invoke(app, [*SMALL, "--model", "llama-3.1-8b", "--lossy-checkpoints", "int8"])
    assert dense.exit_code == 2 and "no linear-attention states" in dense.output


def test_verify_measures_and_never_claims_bit_identical():
    result = runner.invoke(app, ["verify", "--workload", "shared-system", "--lossy-checkpoints",
                                 "int8", "--json"])
    assert result.exit_code == 0, result.output  # a measurement: exit 0 even though it differs
    doc = json.loads(result.output)
    assert doc["schema"] == "kvledger.verify-lossy-checkpoints/1"
    assert (doc["bit_exact"], doc["proof"]) == (False, False) and "all_match" not in doc
    assert "not a proof" in doc["notes"][0]
    (row,) = doc["workloads"]
    assert set(row) == {"workload", "kind", "requests", "cached_prompt_tokens",
                        "generated_tokens", "max_logit_difference", "changed_requests",
                        "changed_tokens"}
    # the scheduler's counts are fixed; how far logits move and which tokens change depends on
    # the CPU (`tests/engine/test_lossy.py`), so only what holds everywhere is asserted
    assert (row["workload"], row["kind"], row["requests"]) == ("shared-system", "int8", 10)
    assert (row["generated_tokens"], row["cached_prompt_tokens"]) == (40, 128)
    assert 0 < row["max_logit_difference"] < math.inf
    assert 0 <= row["changed_requests"] <= row["changed_tokens"] <= row["generated_tokens"]


def test_verify_table_labels_the_measurement():
    result = runner.invoke(app, ["verify", "--workload", "tiny-pools", "--lossy-checkpoints",
                                 "fp8"])
    assert result.exit_code == 0, result.output
    assert "what-if (lossy, not bit-exact)" in result.output
    assert "not a proof" in result.output
    # requests, cached prompt tokens, then the measured cells (CPU-dependent) and "k / 36"
    assert re.search(r"tiny-pools\W+9\W+32\W+[0-9.e+-]+\W+[0-9]\W+[0-9]+ / 36\b",
                     result.output), result.output


def test_verify_skips_host_workloads_by_default_and_refuses_one_named(monkeypatch):
    import kvledger.engine.lossy as lossy_module
    from kvledger.engine.workloads import DEFAULT_WORKLOADS

    seen = []
    measured = lossy_module.lossy_difference("tiny-pools", LossyCheckpoints.INT8)

    def spy(name, kind, **policies):
        seen.append(name)  # which workloads the command asks for; one real measurement serves
        return replace(measured, workload=name)

    monkeypatch.setattr(lossy_module, "lossy_difference", spy)
    result = runner.invoke(app, ["verify", "--lossy-checkpoints", "int8", "--json"])
    assert result.exit_code == 0, result.output
    assert seen == [n for n in DEFAULT_WORKLOADS if not n.startswith("host-")]
    doc = json.loads(result.output)
    assert doc["skipped_workloads"] == ["host-write-back"]
    assert [row["workload"] for row in doc["workloads"]] == seen
    named = runner.invoke(app, ["verify", "--workload", "host-write-back",
                                "--lossy-checkpoints", "int8"])
    assert named.exit_code == 2 and "device states only" in named.output
