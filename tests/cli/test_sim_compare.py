"""`simulate --compare` and the state-policy / time-model flags at the CLI boundary."""

from __future__ import annotations

import json

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
