"""`kvledger simulate`, `figures` and `report` through the real CLI."""

from __future__ import annotations

import csv
import json

import pytest
from typer.testing import CliRunner

from kvledger.cli import app
from kvledger.sim.series import COLUMNS

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args))


def test_simulate_json_and_csv(tmp_path):
    out = tmp_path / "series.csv"
    result = invoke("simulate", "--workload", "shared-prompt", "--num-requests", "60",
                    "--no-progress", "--json", "--csv", str(out), "--kv-cache-dtype", "fp8_e4m3")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["schema"] == "kvledger.simulate/2"
    assert doc["requests"] == {"offered": 60, "finished": 60, "unfinished": []}
    # GLM-5.3-Flash, scaled fp8, 100 GiB: the SPEC §5 pools (T = 7,780,672, K = 343, N = 68)
    assert doc["pools"]["token_pages"] == 7_780_672 // 64
    assert (doc["pools"]["state_slots"], doc["pools"]["max_running_requests"]) == (343, 68)
    assert doc["pools"]["token_bytes"] == 7_260
    assert doc["tokens"]["usable_hit"] <= doc["tokens"]["hit"] <= doc["tokens"]["prompt"]
    assert doc["host"]["available"] is False and doc["host"]["backup_bytes"] is None
    rows = list(csv.reader(out.open()))
    assert tuple(rows[0]) == COLUMNS and len(rows) > 1


def test_simulate_with_the_host_tier_reports_its_traffic(tmp_path):
    out = tmp_path / "series.csv"
    result = invoke("simulate", "--workload", "agent", "--num-requests", "80", "--no-progress",
                    "--json", "--csv", str(out), "--kv-cache-dtype", "fp8_e4m3",
                    "--max-total-tokens", str(300 * 64), "--enable-hierarchical-cache",
                    "--hicache-ratio", "2", "--hicache-write-policy", "write_back")
    assert result.exit_code == 0, result.output
    host = json.loads(result.stdout)["host"]
    assert host["available"] is True and host["policy"] == "write_back"
    # int(2 · 19,200) // 64 + 1 pages of 64 · 7,260 B; 2 · 343 + 1 state slots
    assert (host["capacity_pages"], host["capacity_slots"]) == (601, 687)
    assert host["page_bytes"] == 64 * 7_260 and host["backup_bytes"] > 0
    assert host["backup_bytes"] == (host["backup_pages"] * host["page_bytes"]
                                    + host["backup_slots"] * host["slot_bytes"])
    rows = list(csv.DictReader(out.open()))
    assert int(float(rows[-1]["host_backup_pages_cum"])) == host["backup_pages"]
    assert max(int(float(r["host_pages_used"])) for r in rows) <= host["capacity_pages"]
    table = runner.invoke(app, ["simulate", "--workload", "agent", "--num-requests", "40",
                                "--no-progress", "--enable-hierarchical-cache"],
                          env={"COLUMNS": "200"})
    assert table.exit_code == 0, table.output
    for text in ("Host tier (HiCache, write_through", "backed up (device → host)",
                 "loaded back (host → device)",
                 "prompt tokens made usable by loadbacks (KV pages or a state)"):
        assert text in table.output


def test_a_write_policy_without_the_host_tier_is_refused():
    result = invoke("simulate", "--workload", "chat", "--num-requests", "5", "--no-progress",
                    "--hicache-write-policy", "write_back")
    assert result.exit_code == 2
    assert "--hicache-write-policy write_back: has no effect without " \
           "--enable-hierarchical-cache" in result.output


def test_simulate_table_names_the_ledgers():
    result = runner.invoke(app, ["simulate", "--workload", "chat", "--num-requests", "40",
                                 "--no-progress"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for text in ("token hit rate", "usable hit rate", "token pages (T)", "state slots (K)",
                 "running requests (N)", "host tier", "not available"):
        assert text in result.output


def test_simulate_input_errors_are_one_line():
    both = invoke("simulate", "--workload", "chat", "--trace", __file__)
    assert both.exit_code == 2 and "exactly one of --trace FILE and --workload NAME" in both.output
    unknown = invoke("simulate", "--workload", "nope")
    assert unknown.exit_code == 2 and "--workload 'nope'" in unknown.output
    bad = invoke("simulate", "--trace", __file__, "--no-progress")
    assert bad.exit_code == 2 and "line 1: not valid JSON" in bad.output


def test_figures_and_report_write_their_files(tmp_path):
    figs = invoke("figures", "--out", str(tmp_path / "figs"))
    assert figs.exit_code == 0, figs.output
    svgs = sorted(p.name for p in (tmp_path / "figs").glob("*.svg"))
    assert svgs == ["fig1_layer_map.svg", "fig2_token_bytes.svg", "fig3_pool_tree.svg",
                    "fig4_index_page.svg", "fig5_hicache_cover.svg"]
    page = tmp_path / "report.html"
    rep = invoke("report", "--out", str(page), "--workload", "zipf", "--num-requests", "40")
    assert rep.exit_code == 0, rep.output
    html = page.read_text()
    assert html.count("<svg") == 7 and "Simulation: zipf (seed 0)" in html


def test_torch_loads_only_with_the_host_tier():
    pytest.importorskip("torch")  # the host tier's half needs the memory extra
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from kvledger.cli import app\n"
        "args = ['simulate', '--workload', 'chat', '--num-requests', '5', '--no-progress']\n"
        "assert CliRunner().invoke(app, args).exit_code == 0\n"
        "print('torch' in sys.modules)\n"
        "assert CliRunner().invoke(app, [*args, '--l3-size', '10']).exit_code == 0\n"
        "print(any(m in sys.modules for m in ('torch', 'xxhash', 'redis')))\n"
        "assert CliRunner().invoke(app, [*args, '--enable-hierarchical-cache']).exit_code == 0\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # the store tier in accounting mode needs neither torch nor the store extra's clients
    assert out.stdout.split() == ["False", "False", "True"], out.stdout


def test_simulate_with_a_store_tier_reports_its_hits_and_bytes():
    result = invoke("simulate", "--workload", "zipf", "--num-requests", "200", "--no-progress",
                    "--json", "--l3-size", "100", "--l3-backend", "mooncake",
                    "--max-total-tokens", "60000")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    store, tokens = doc["store"], doc["tokens"]
    assert store["backend"] == "mooncake" and store["capacity_bytes"] == 100 * 2**30
    assert store["restores"] > 0 and store["restored_tokens"] > 0
    # every prompt token is a usable hit or computed; a prefix restored from the store is
    # a device hit by the time its request is admitted
    assert tokens["usable_hit"] + tokens["prefill_computed"] == tokens["prompt"]
    assert 0 < store["restored_tokens"] <= tokens["usable_hit"]
    assert store["reads"] >= store["restores"]
    assert store["used_bytes"] <= store["capacity_bytes"]
    assert store["put_bytes"] >= store["used_bytes"] and store["get_ms"] > 0
    table = invoke("simulate", "--workload", "zipf", "--num-requests", "50", "--no-progress",
                   "--l3-size", "100")
    assert table.exit_code == 0, table.output
    assert "Store tier (L3, mooncake" in table.stdout


def test_simulate_without_a_store_tier_has_a_null_store():
    result = invoke("simulate", "--workload", "chat", "--num-requests", "5", "--no-progress",
                    "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["store"] is None


@pytest.mark.parametrize("args, message", [
    (["--l3-size", "0"], "--l3-size"),
    (["--l3-size", "nan"], "--l3-size"),
    (["--l3-backend", "redis"], "--l3-backend redis: has no effect without --l3-size"),
    (["--l3-size", "1", "--model", "llama-3.1-8b"], "--l3-size"),
])
def test_bad_store_flags_name_the_flag(args, message):
    result = invoke("simulate", "--workload", "chat", "--num-requests", "5", "--no-progress",
                    *args)
    assert result.exit_code != 0
    assert message in result.output
    assert "Traceback" not in result.output
