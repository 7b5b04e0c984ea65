"""`kvledger sweep`, `compare` and `recommend` through the real CLI, for every embedded model."""

from __future__ import annotations

import csv
import json

import pytest
from typer.testing import CliRunner

from kvledger.cli import app
from kvledger.model.config import embedded_names
from kvledger.sglang.launch import parse_flags
from kvledger.sglang.plan import make_plan
from kvledger.sizing import Axes, recommend, sweep

runner = CliRunner()
# SGLang has no Jamba model class (the sweep plans under SGLang's rules).
SGLANG_HAS_NO_CLASS = {"jamba-1.5-mini": "has no native JambaForCausalLM"}
SGLANG_MODELS = [m for m in embedded_names() if m not in SGLANG_HAS_NO_CLASS]


def invoke(*args: str):
    return runner.invoke(app, list(args))


@pytest.mark.parametrize("model", embedded_names())
def test_sweep_rows_carry_the_plans_own_totals(model):
    result = invoke("sweep", "--model", model, "--gpu", "H200,B300", "--tp", "8,16", "--dp",
                    "1,4", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["schema"] == "kvledger.sweep/1" and len(doc["rows"]) == 8
    planned = [r for r in doc["rows"] if r["ok"]]
    if model in SGLANG_HAS_NO_CLASS:
        # every row refused with SGLang's own loader message, none planned
        assert not planned and all(SGLANG_HAS_NO_CLASS[model] in r["error"] for r in doc["rows"])
        return
    assert planned, [r["error"] for r in doc["rows"]]
    for row in planned:
        tot, worker = row["totals"], row["per_worker"]
        assert tot["ranks"] == row["tp_size"]
        assert tot["workers"] == (row["dp_size"] if row["enable_dp_attention"] else 1)
        assert tot["tokens"] == worker["max_total_tokens"] * tot["workers"]
        assert tot["running_requests"] == worker["max_running_requests"] * tot["workers"]
        assert row["requests_per_gpu"] == round(tot["running_requests"] / tot["ranks"], 3)
        plan = make_plan(model, parse_flags(
            ["--tp", str(row["tp_size"]), "--dp", str(row["dp_size"])]
            + (["--enable-dp-attention"] if row["enable_dp_attention"] else [])).deployment,
            gpu=row["gpu"])
        assert tot["token_pool_bytes"] == plan.capacity.totals.token_pool_bytes
    for row in doc["rows"]:
        assert row["ok"] or row["error"]  # a failing row says why


def test_sweep_dp_on_eight_h200s_trades_tokens_for_nothing_in_concurrency():
    # the purchase question: DP sizes on 8×H200, GLM-5.3-Flash. DP multiplies the
    # token pools (3.6 M → 21 M tokens) but state slots bind every row, and the per-rank
    # state pool shrinks as attn_tp falls, so running requests fall (451 → 320), not rise.
    rows = sweep("glm-5.3-flash", Axes(gpus=("H200",), tp=(8,), dp=(1, 2, 4, 8)))
    tokens = [r.totals.tokens for r in rows]
    running = [r.totals.running_requests for r in rows]
    assert tokens == sorted(tokens) and tokens[-1] > 5 * tokens[0]
    assert all(r.plan.capacity.binding.code == "state_slots" for r in rows)
    assert running == sorted(running, reverse=True)
    for r in rows:  # every row is its plan's own totals
        cap = r.plan.capacity
        assert r.totals.tokens == cap.max_total_tokens * r.plan.layout.deployment.attn_dp_size


def test_sweep_table_csv_figure_and_check(tmp_path):
    out, fig = tmp_path / "rows.csv", tmp_path / "sweep.svg"
    result = invoke("sweep", "--gpu", "H200", "--tp", "8", "--dp", "1,8", "--requests", "4096",
                    "--context", "131072", "--check", "--csv", str(out), "--figure", str(fig))
    assert result.exit_code == 1  # nothing fits 4,096 × 131,072 tokens on 8 GPUs
    assert "glm-5.3-flash: 2 deployments" in result.stdout and "…" not in result.stdout
    lines = list(csv.DictReader(out.open()))
    doc = json.loads(invoke("sweep", "--gpu", "H200", "--tp", "8", "--dp", "1,8",
                            "--json").stdout)
    assert [int(r["totals.tokens"]) for r in lines] == [r["totals"]["tokens"]
                                                          for r in doc["rows"]]
    assert fig.read_text().count("<svg") == 1 and "deployment sweep" in fig.read_text()
    bad = invoke("sweep", "--tp", "8,x")
    assert bad.exit_code == 2 and "error: --tp 'x': expected a positive integer" in bad.stderr
    skipped = json.loads(invoke("sweep", "--tp", "8", "--dp", "3", "--json").stdout)["rows"][0]
    assert skipped["error"] == "--dp-size 3: must divide --tp-size 8 (DP attention)"


@pytest.mark.parametrize("model", SGLANG_MODELS)
def test_compare_marks_what_differs(model):
    result = invoke("compare", "--model", model, "--a", "--tp 8 --gpu B300",
                    "--b", "--tp 8 --dp 2 --enable-dp-attention --gpu B300", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    rows = {r["quantity"]: r for r in doc["rows"]}
    assert rows["dp_size"] == {"quantity": "dp_size", "label": "dp", "a": 1, "b": 2,
                               "differs": True}
    assert not rows["gpu"]["differs"] and not rows["model"]["differs"]
    assert doc["differences"] == sum(r["differs"] for r in doc["rows"])
    table = invoke("compare", "--model", model, "--a", "--tp 8 --gpu B300",
                   "--b", "--tp 8 --dp 2 --enable-dp-attention --gpu B300")
    assert "≠" in table.stdout and "quantities differ" in table.stdout


@pytest.mark.parametrize("model", SGLANG_MODELS)
def test_recommend_finds_the_cheapest_fitting_layout(model):
    result = invoke("recommend", "--model", model, "--requests", "16", "--context", "4096",
                    "--gpu", "H200,B300", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    fits = doc["fits"]
    assert fits and [f["ranks"] for f in fits] == sorted(f["ranks"] for f in fits)
    assert all(f["headroom"] >= 1 for f in fits)
    for f in fits:
        if f["nodes"] == 1:  # the pasted command launches exactly the recommended layout
            dep = parse_flags(f["command"]).deployment
            assert (dep.tp_size, dep.dp_size, dep.enable_dp_attention,
                    dep.kv_cache_dtype.value) == (f["tp_size"], f["dp_size"],
                                                  f["enable_dp_attention"], f["kv_cache_dtype"])


@pytest.mark.parametrize("model", sorted(SGLANG_HAS_NO_CLASS))
def test_compare_and_recommend_refuse_a_model_sglang_cannot_load(model):
    for args in (["compare", "--model", model, "--a", "--tp 8 --gpu B300", "--b", "--tp 4"],
                 ["recommend", "--model", model, "--requests", "16", "--context", "4096",
                  "--gpu", "H200"]):
        result = invoke(*args)
        assert result.exit_code != 0 and "Traceback" not in result.output
        assert SGLANG_HAS_NO_CLASS[model] in " ".join(result.output.split())


def test_recommend_says_why_the_others_fail():
    rec = recommend("glm-5.3-flash", requests=512, context_tokens=32_768, gpus=("H200",))
    best = rec.best
    assert best is not None and best.row.totals.ranks == 16  # 8 H200s hold too few states
    reasons = dict(rec.failures)
    assert reasons["state slots overflow"] > 0 and reasons["token KV overflow"] > 0
    assert sum(reasons.values()) + len({(r.row.gpu, r.row.plan.layout.deployment)
                                        for r in rec.fits}) <= rec.searched
    table = invoke("recommend", "--requests", "512", "--context", "32768", "--gpu", "H200")
    assert "Why the other layouts do not fit" in table.stdout
    assert "#1 SGLang: python -m sglang.launch_server --model-path zai-org/GLM-5.3-Flash" in table.stdout
    assert "#1 vLLM:   " in table.stdout
    none = invoke("recommend", "--requests", "100000", "--context", "1000000", "--gpu", "H100")
    assert none.exit_code == 1 and "no layout in the search space fits" in none.stdout
