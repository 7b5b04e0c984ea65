"""One convention for every command (issue 15): each defect the issue lists, through the CLI."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from kvledger import __version__
from kvledger.cli import app

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args))


def test_an_unknown_flag_exits_2_with_a_did_you_mean():
    # SGLang's argparse parser exits 2 on --tpp; kvledger used to exit 0 and ignore it.
    result = invoke("plan", "--tpp", "8")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: --tpp: unknown flag; did you mean --tp?")
    own = invoke("models", "--jsn")
    assert own.exit_code == 2 and "error: --jsn: unknown flag; did you mean --json?" in own.stderr


def test_unambiguous_prefixes_are_read_as_the_flag():
    # --speculative-algo NEXTN is how SGLang's docs launch; it was refused as an abbreviation.
    doc = json.loads(invoke("plan", "--json", "--speculative-algo", "NEXTN", "--avail",
                            "80").stdout)
    assert doc["deployment"]["speculative_algorithm"] == "EAGLE"
    assert doc["capacity"]["available_bytes"] == 80 * 2**30
    ambiguous = invoke("plan", "--re", "3")
    assert ambiguous.exit_code == 2 and "error: --re: ambiguous flag, could be" in ambiguous.stderr


def test_explain_json_is_explain_not_an_sglang_abbreviation():
    # explain --json was "an abbreviation of --json-model-override-args"
    result = invoke("explain", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["schema"] == "kvledger.explain/1"
    assert "528 B × 11 layers = 5,808 B/token" in "\n".join(doc["lines"])


def test_help_and_version():
    short = invoke("plan", "-h")
    assert short.exit_code == 0 and "Usage:" in short.stdout and "--check" in short.stdout
    assert invoke("models", "-h").exit_code == 0
    version = invoke("--version")
    assert version.exit_code == 0 and version.stdout.strip() == f"kvledger {__version__}"


def test_check_makes_a_workload_that_does_not_fit_exit_1():
    # GLM-5.3-Flash, 100 GiB: 64 × 131,072 tokens need 8.4 M tokens, T is 7,780,672
    unfit = invoke("plan", "--requests", "64", "--context", "131072", "--check")
    assert unfit.exit_code == 1 and "does NOT fit" in unfit.stdout
    fits = invoke("plan", "--requests", "8", "--context", "8192", "--check", "--json")
    assert fits.exit_code == 0 and json.loads(fits.stdout)["workload"]["fits"] is True
    assert invoke("plan", "--requests", "64", "--context", "131072").exit_code == 0
    alone = invoke("plan", "--check")
    assert alone.exit_code == 2 and "--check: needs a workload" in alone.stderr


def test_piped_tables_never_truncate():
    # CliRunner's stdout is not a terminal, as a pipe: names and totals were cut with "…"
    result = invoke("plan", "--model", "kimi-linear-48b-a3b-instruct")
    assert result.exit_code == 0, result.output
    assert "…" not in result.stdout and "kimi-linear-48b-a3b-instruct" in result.stdout
    assert "…" not in invoke("models").stdout


def test_the_slack_row_prints_the_slack_share():
    result = invoke("plan", "--gpu", "H200", "--tp", "8", "--mem-fraction-static", "0.9")
    line = next(ln for ln in result.stdout.splitlines() if "slack (1 − mem_fraction_static)" in ln)
    assert "1 − 0.9 = 0.1" in line


def test_errors_come_in_one_style():
    library = invoke("plan", "--tp", "3")  # a Deployment error
    parser = invoke("plan", "--requests", "abc")  # a typer/click parameter error
    for result in (library, parser):
        assert result.exit_code == 2
        assert result.stderr.startswith("error: ") and "╭" not in result.stderr
    assert "attn_tp" in library.stderr
    assert parser.stderr.startswith("error: --requests 'abc': expected an integer\n")
    assert parser.stderr.splitlines()[-1] == "see `kvledger plan -h`"


ENVELOPE = ["schema", "kvledger_version", "ignored_flags", "notes"]


@pytest.mark.parametrize(("args", "schema"), [
    (("plan", "--port", "30000"), "kvledger.plan/2"),
    (("explain",), "kvledger.explain/1"),
    (("models",), "kvledger.models/1"),
    (("gpus",), "kvledger.gpus/1"),
    (("simulate", "--workload", "chat", "--num-requests", "5", "--no-progress"),
     "kvledger.simulate/2"),
    (("figures",), "kvledger.figures/1"),
    (("report",), "kvledger.report/1"),
    (("sweep", "--tp", "1,2"), "kvledger.sweep/1"),
    (("compare", "--a", "--tp 1", "--b", "--tp 2"), "kvledger.compare/1"),
    (("recommend", "--requests", "4", "--context", "1024", "--gpu", "H200"),
     "kvledger.recommend/1"),
])
def test_every_json_document_has_the_envelope(args, schema, tmp_path):
    where = {"figures": ("--out", str(tmp_path)), "report": ("--out", str(tmp_path / "r.html"))}
    result = invoke(*args, *where.get(args[0], ()), "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert list(doc)[:4] == ENVELOPE
    assert doc["schema"] == schema and doc["kvledger_version"] == __version__
    if args[0] == "plan":
        assert doc["ignored_flags"] == ["--port"]


def test_enumerations_are_machine_codes():
    cap = json.loads(invoke("plan", "--json").stdout)["capacity"]
    assert cap["binding"] == "state_slots" and cap["binding_label"] == "state slots"
    assert set(cap["limits"]) == {"context_heuristic", "tokens", "state_slots"}


def test_explain_states_the_plans_assumptions():
    out = invoke("explain", "--gpu", "H200", "--tp", "8").stdout
    assert "assumed: --mem-fraction-static not given" in out
    assert "assumed: weights per rank estimated from the config" in out


def test_a_command_needing_torch_names_the_extra_when_torch_is_absent():
    code = (
        "import sys\n"
        "sys.modules['torch'] = sys.modules['xxhash'] = None  # as in the base install\n"
        "from typer.testing import CliRunner\n"
        "from kvledger.cli import app\n"
        "for args in (['pools'], ['verify'], ['simulate', '--workload', 'chat', "
        "'--num-requests', '5', '--no-progress', '--enable-hierarchical-cache']):\n"
        "    r = CliRunner().invoke(app, args)\n"
        "    print(r.exit_code, r.stderr.strip())\n"
        "r = CliRunner().invoke(app, ['plan', '--json'])\n"
        "print(r.exit_code)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out[:3] == [
        "2 error: kvledger pools (device pools) needs torch and xxhash, which are not "
        "installed: pip install 'kvledger[memory]'",
        "2 error: kvledger verify (the reference engine) needs torch and xxhash, which are "
        "not installed: pip install 'kvledger[memory]'",
        "2 error: simulating the host tier (--enable-hierarchical-cache) needs torch and xxhash, "
        "which are not installed: pip install 'kvledger[memory]'",
    ]
    assert out[3] == "0"  # the planner runs without it


def test_the_host_note_prints_the_policy_not_its_enum_repr():
    pytest.importorskip("torch")  # the host tier holds torch tensors (meta device)
    args = ("simulate", "--workload", "chat", "--num-requests", "5", "--no-progress",
            "--enable-hierarchical-cache")
    table, doc = invoke(*args), json.loads(invoke(*args, "--json").stdout)
    assert "BackupPolicy." not in table.stdout
    assert doc["host"]["note"].startswith("write_through: host pools of ")
    assert "write_through: host pools of " in table.stdout


def test_pools_json_has_the_envelope():
    pytest.importorskip("torch")
    # meta: the envelope is what is checked; GLM-5.3-Flash's scaled CPU pools hold 0.9 GB
    # (tests/cli/test_pools_cmd.py allocates them for real)
    doc = json.loads(invoke("pools", "--device", "meta", "--json", "--port", "1").stdout)
    assert list(doc)[:4] == ENVELOPE and doc["schema"] == "kvledger.pools/2"
    assert doc["ignored_flags"] == ["--port"] and "ignored" not in doc


def test_the_time_series_csv_has_no_binary_residue(tmp_path):
    out = tmp_path / "series.csv"
    result = invoke("simulate", "--workload", "zipf", "--num-requests", "200", "--no-progress",
                    "--csv", str(out))
    assert result.exit_code == 0, result.output
    cells = [c for line in out.read_text().splitlines()[1:] for c in line.split(",")]
    # 225.97699999999998 was written as is; the clock has µs resolution
    assert all(len(c.partition(".")[2]) <= 6 for c in cells), max(cells, key=len)
