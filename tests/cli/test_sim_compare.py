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
    bound = doc["bound"]
    assert bound["method"] == "relaxation" and bound["exact"] is False
    assert bound["usable_hit"] == min(bound["kv_relaxation_hit"], bound["state_relaxation_hit"])
    for row in doc["rows"]:
        assert row["fraction_of_bound"] == row["usable_hit"] / bound["usable_hit"]
        if row["policy"] != doc["rows"][-1]["policy"]:
            assert row["fraction_of_bound"] <= 1
    assert sorted(p.rsplit("/", 1)[-1] for p in doc["figures"]) == ["policies.png",
                                                                     "policies.svg"]


def test_compare_table_renders():
    result = invoke(*SMALL, "--compare")
    assert result.exit_code == 0, result.output
    assert "FULL-only ceiling" in result.output and "ghost-branch" in result.output
    assert "offline bound (relaxation)" in result.output and "of" in result.output


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


def test_compare_progress_bar_is_on_stderr_only(monkeypatch):
    # The bar goes to the error console (a terminal here), is transient, and never touches
    # stdout: --json stays one clean document; --no-progress silences it.
    import io

    from rich.console import Console

    import kvledger.cli.runners.sim_compare as runner_module

    shown = io.StringIO()
    monkeypatch.setattr(runner_module, "err_console",
                        Console(file=shown, force_terminal=True, width=120))
    args = [a for a in SMALL if a != "--no-progress"]
    result = invoke(*args, "--compare", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["schema"] == "kvledger.simulate-compare/1"
    # every pair, the ceiling and the bound: len(COMPARE_PAIRS) + 2 runs
    runs = len(COMPARE_PAIRS) + 2
    assert "policies on shared-prompt (seed 0): runs" in shown.getvalue()
    assert f"{runs}/{runs}" in shown.getvalue()
    quiet = io.StringIO()
    monkeypatch.setattr(runner_module, "err_console", Console(file=quiet, force_terminal=True))
    assert invoke(*SMALL, "--compare", "--json").exit_code == 0
    assert quiet.getvalue() == ""


def test_compare_policies_reports_progress_over_every_run():
    from kvledger.core.runner import RunObserver
    from kvledger.report.policy_compare import compare_policies
    from kvledger.sglang.plan import make_plan
    from kvledger.sim.config import SimConfig
    from kvledger.sim.generators import GENERATORS, GeneratorParams

    plan = make_plan(kv_cache_dtype="fp8_e4m3")
    work = GENERATORS["shared-prompt"].generate(GeneratorParams(num_requests=30, seed=1))
    events: list[tuple] = []

    class Seen(RunObserver):
        def started(self, index, task):
            events.append(("start", index, task.label))

        def ticked(self, index, done, total):
            events.append(("tick", index, done, total))

        def finished(self, index):
            events.append(("done", index))

    pairs = COMPARE_PAIRS[:2]
    compare_policies(plan, work, SimConfig(), pairs, observer=Seen())
    # serially: the baseline first (the ceiling and the bound wait on it), then by cost
    # (`Task.cost`): the bound, the FLOP-aware pair, the ceiling
    labels = [e[2] for e in events if e[0] == "start"]
    assert labels == ["engine + lru", "offline bound", "engine + flop-aware",
                      "FULL-only ceiling"]
    assert [e[1] for e in events if e[0] == "done"] == [0, 2, 3, 1]
    # the replays tick once per request (30 of them), the ceiling and the bound not at all
    for index in (0, 3):
        ticks = [e[2] for e in events if e[0] == "tick" and e[1] == index]
        assert ticks == sorted(ticks) and ticks[-1] == 30
        assert {e[3] for e in events if e[0] == "tick" and e[1] == index} == {30}
    assert not [e for e in events if e[0] == "tick" and e[1] in (1, 2)]


def test_every_hit_rate_output_says_what_it_measures(tmp_path):
    # replay, simulate and the ceiling measure different things (docs/hit-rates.md); each
    # output names its own and points at the others
    from kvledger.report import hit_rates

    sim = json.loads(invoke(*SMALL, "--json").stdout)
    assert hit_rates.SIMULATE in sim["notes"]
    assert "not comparable with `replay`" in invoke(*SMALL).output
    both = json.loads(invoke(*SMALL, "--compare", "--json").stdout)
    assert {hit_rates.SIMULATE, hit_rates.CEILING} <= set(both["notes"])
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(
        json.dumps({"timestamp": i, "input_length": 600, "output_length": 4,
                    "hash_ids": [0, 1]}) + "\n" for i in range(3)))
    replay = runner.invoke(app, ["replay", "--trace", str(trace), "--pool-tokens", "4096",
                                 "--state-slots", "8", "--no-progress", "--json"])
    assert replay.exit_code == 0, replay.output
    assert hit_rates.REPLAY in json.loads(replay.stdout)["notes"]


@pytest.mark.parametrize("name", ["tool-use", "long-doc-qa"])
def test_the_new_workloads_run_through_compare_with_a_bound(name):
    result = invoke("--workload", name, "--num-requests", "30", "--no-progress", "--compare",
                    "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["bound"]["prompt_tokens"] > 0
    assert all(r["fraction_of_bound"] <= 1 for r in doc["rows"][:-1])


def test_with_a_store_tier_no_bound_is_claimed():
    result = invoke(*SMALL, "--l3-size", "5", "--compare", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["bound"] is None
    assert all(r["fraction_of_bound"] is None for r in doc["rows"])
    assert "No offline bound" in invoke(*SMALL, "--l3-size", "5", "--compare").output
