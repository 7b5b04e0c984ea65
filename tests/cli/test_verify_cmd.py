"""`kvledger verify` through the real CLI."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from typer.testing import CliRunner

import kvledger.engine.verify as verify_module
from kvledger.cli import app
from kvledger.engine.workloads import DEFAULT_WORKLOADS, WORKLOADS

runner = CliRunner()


def test_one_workload_as_json():
    result = runner.invoke(app, ["verify", "--workload", "branching", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["all_match"] is True
    (row,) = doc["workloads"]
    script = WORKLOADS["branching"].script()
    assert row["workload"] == "branching" and row["requests"] == script.num_requests == 6
    # Prompt lengths from the script: 70; 74+30; 104+4+10; 74+7; 50+9; 84+5 tokens.
    assert row["prompt_tokens"] == 70 + 104 + 118 + 81 + 59 + 89
    assert row["generated_tokens"] == 6 * 4 and row["mismatched"] == []
    assert row["hit_rate"] == round(row["cached_prompt_tokens"] / row["prompt_tokens"], 4)


def _fake_report(name: str, mismatched: tuple[int, ...] = ()):
    return verify_module.VerifyReport(
        workload=name, requests=3, prompt_tokens=90, generated_tokens=6,
        cached_prompt_tokens=32, loadback_tokens=16, loadback_states=1, loadback_failures=0,
        evicted_tokens=48, branch_states=0, mismatched=mismatched, cached_seconds=0.1,
        fresh_seconds=0.2)


def test_the_default_table_and_a_mismatch_exit_status(monkeypatch):
    seen = []

    def fake(name, **policies):
        seen.append(name)
        return _fake_report(name, mismatched=(2,) if name == "tiny-pools" else ())

    monkeypatch.setattr(verify_module, "verify", fake)
    result = runner.invoke(app, ["verify"])
    assert tuple(seen) == DEFAULT_WORKLOADS
    assert result.exit_code == 1
    assert "differ: [2]" in result.stdout and "some outputs differ" in result.stdout
    assert "16 / 1" in result.stdout  # loadback tokens / states


def test_all_runs_every_workload(monkeypatch):
    seen = []
    monkeypatch.setattr(verify_module, "verify",
                        lambda n, **policies: seen.append(n) or _fake_report(n))
    assert runner.invoke(app, ["verify", "--workload", "all", "--json"]).exit_code == 0
    assert seen == list(WORKLOADS)


@pytest.mark.parametrize("bad", ["nope", "ALL"])
def test_an_unknown_workload_is_named(bad):
    result = runner.invoke(app, ["verify", "--workload", bad])
    assert result.exit_code == 2
    assert f"--workload '{bad}': expected all or one of shared-system" in result.output


def test_the_report_is_plain_data():
    report = replace(_fake_report("x"), mismatched=(1, 4))
    assert not report.all_match and report.hit_rate == 32 / 90


def test_verify_with_state_policies_names_them_and_matches():
    result = runner.invoke(app, ["verify", "--workload", "branching", "--state-admission",
                                 "ghost-branch", "--state-eviction", "flop-aware", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["all_match"] and doc["state_policies"] == "ghost-branch + flop-aware"
