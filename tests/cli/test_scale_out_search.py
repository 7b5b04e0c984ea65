"""sweep and recommend over scale-out layouts: pipeline stages, decode context parallelism,
prefill/decode roles, and the splits of a fixed number of nodes."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from kvledger.cli import app
from kvledger.sglang.deploy import Deployment, DisaggMode
from kvledger.sglang.plan import make_plan
from kvledger.sizing import Axes, recommend, sweep

runner = CliRunner()
DSV32 = "deepseek-v3.2"


def invoke(*args: str):
    return runner.invoke(app, list(args))


def test_sweep_axes_for_stages_dcp_and_roles_plan_each_layout():
    result = invoke("sweep", "--model", DSV32, "--gpu", "B200", "--tp", "8", "--pp-size", "1,2",
                    "--dcp-size", "1,8", "--disaggregation-mode", "null,decode", "--json",
                    "--no-progress")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["rows"]
    assert [(r["pp_size"], r["dcp_size"], r["disaggregation_mode"]) for r in rows] == [
        (pp, dcp, role) for pp in (1, 2) for dcp in (1, 8) for role in ("null", "decode")]
    assert all(r["ok"] for r in rows)
    for row in rows:  # each row is the plan of its own deployment
        dep = Deployment(tp_size=8, pp_size=row["pp_size"], dcp_size=row["dcp_size"],
                         disaggregation_mode=DisaggMode(row["disaggregation_mode"]))
        plan = make_plan(DSV32, dep, gpu="B200")
        assert row["totals"]["tokens"] == plan.totals.tokens
        assert row["totals"]["ranks"] == 8 * row["pp_size"]
        # a DCP worker holds T physical rows per rank × dcp tokens
        assert row["totals"]["tokens"] == plan.capacity.max_total_tokens * row["dcp_size"]
        assert row["nodes"] == row["pp_size"]


def test_sweep_table_names_the_layout():
    result = invoke("sweep", "--model", DSV32, "--gpu", "B200", "--tp", "8", "--pp-size", "2",
                    "--dcp-size", "8", "--disaggregation-mode", "decode", "--no-progress")
    assert result.exit_code == 0, result.output
    assert "tp 8 pp 2 dcp 8 decode" in result.stdout


def test_sweep_refusals_quote_the_engine():
    result = invoke("sweep", "--model", DSV32, "--gpu", "B200", "--tp", "8", "--dcp-size", "3,8",
                    "--disaggregation-mode", "decode", "--rules", "sglang-0.5.23", "--json",
                    "--no-progress")
    assert result.exit_code == 0, result.output
    errors = [r["error"] for r in json.loads(result.stdout)["rows"]]
    assert errors[0] == ('--dcp-size 3: SGLang needs it to divide --tp-size 8 '
                         '("tensor_model_parallel_size must be divisible by '
                         'decode_context_parallel_size")')
    assert errors[1] == ('--dcp-size 8: SGLang (sglang-0.5.23) refuses it: "DSA DCP does not '
                         'support PD disaggregation."')


def test_sweep_nodes_over_stages_set_tp():
    rows = sweep(DSV32, Axes(gpus=("B200",), nodes=(2,), pp=(1, 2)))
    assert [(r.point.deployment.tp_size, r.point.deployment.pp_size, r.point.nodes,
             r.totals.ranks) for r in rows] == [(16, 1, 2, 16), (8, 2, 2, 16)]


def test_sweep_axis_values_are_checked():
    for args, message in [(["--pp-size", "0"], "--pp-size '0': expected a positive integer"),
                          (["--dcp-size", "2,2"], "--dcp-size '2,2': a value is listed twice"),
                          (["--disaggregation-mode", "both"], "--disaggregation-mode 'both'")]:
        result = invoke("sweep", "--model", DSV32, "--tp", "8", *args)
        assert result.exit_code == 2 and message in result.output, result.output


def test_vllm_rows_of_a_role_say_the_connector_is_not_modelled():
    rows = sweep(DSV32, Axes(gpus=("B200",), tp=(8,), role=(DisaggMode.DECODE,)),
                 engines=("sglang", "vllm"))
    sglang_row, vllm_row = rows
    assert not any("KV connector" in n for n in sglang_row.notes)
    assert any("KV connector" in n for n in vllm_row.notes)


def test_recommend_splits_a_fixed_number_of_nodes():
    rec = recommend(DSV32, requests=512, context_tokens=131_072, gpus=("B200",), nodes=8)
    assert rec.fits and all(f.row.totals.ranks == 64 for f in rec.fits)
    assert rec.searched == 70
    best = rec.best.row.plan.deployment
    # holding 512 requests of 128k tokens on 64 B200s takes DCP or DP attention over stages
    assert best.pp_size > 1 and (best.dcp_size > 1 or best.enable_dp_attention)
    assert "--nnodes 8" in rec.best.command and f"--pp-size {best.pp_size}" in rec.best.command
    # ties in headroom go to the layout holding the most requests of C tokens
    held = [f.row.plan.fit_at(131_072).requests for f in rec.fits
            if f.headroom == rec.fits[0].headroom]
    assert held == sorted(held, reverse=True)
    result = invoke("recommend", "--model", DSV32, "--gpu", "B200", "--nodes", "8",
                    "--requests", "512", "--context", "131072", "--json", "--no-progress")
    assert result.exit_code == 0, result.output
    fits = json.loads(result.stdout)["fits"]
    assert [(f["pp_size"], f["dcp_size"]) for f in fits] == [
        (f.row.plan.deployment.pp_size, f.row.plan.deployment.dcp_size) for f in rec.fits]


def test_recommend_searches_dcp_and_stages_by_default():
    rec = recommend(DSV32, requests=64, context_tokens=131_072, gpus=("B200",))
    assert rec.searched == 76
    layouts = {(f.row.plan.deployment.tp_size, f.row.plan.deployment.dcp_size) for f in rec.fits}
    assert (8, 8) in layouts  # DCP 8 on one node holds 8× the tokens of its TP rows


def test_recommend_nodes_is_bounded():
    result = invoke("recommend", "--requests", "4", "--context", "1024", "--nodes", "0")
    assert result.exit_code == 2 and "--nodes 0" in result.output, result.output


def test_pd_split_of_eight_nodes_gives_decode_the_fewest_nodes_that_hold_the_workload():
    from kvledger.sizing.pd_split import pd_splits

    result = pd_splits(DSV32, requests=512, context_tokens=131_072, gpu="B200", nodes=8)
    assert [s.ratio for s in result] == [f"{8 - d}P:{d}D" for d in range(1, 8)]
    fitting = [s.decode.nodes for s in result if s.fits]
    assert result.best.decode.nodes == min(fitting)
    for split in result:  # each side is recommend's answer for its role on its nodes
        decode = recommend(DSV32, requests=512, context_tokens=131_072, gpus=("B200",),
                           base=Deployment(disaggregation_mode=DisaggMode.DECODE),
                           nodes=split.decode.nodes, top=1)
        assert (split.decode.best is None) == (decode.best is None)
        if decode.best is not None:
            assert split.decode.best.command == decode.best.command
            assert "--disaggregation-mode decode" in decode.best.command
            assert decode.best.row.totals.ranks == 8 * split.decode.nodes
        else:  # the decode side that cannot hold 512 × 128k says what ran out
            assert split.decode.why == decode.failures[0][0]
    # fewer decode nodes than the answer's cannot hold the workload
    assert all(not s.decode.fits for s in result if s.decode.nodes < result.best.decode.nodes)


def test_recommend_pd_through_the_cli():
    result = invoke("recommend", "--model", DSV32, "--gpu", "B200", "--nodes", "8", "--pd",
                    "--requests", "512", "--context", "131072", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["schema"] == "kvledger.recommend-pd/1"
    best = next(s for s in doc["splits"] if s["ratio"] == doc["best"])
    assert best["decode"]["layout"]["disaggregation_mode"] == "decode"
    assert best["prefill"]["layout"]["disaggregation_mode"] == "prefill"
    table = invoke("recommend", "--model", DSV32, "--gpu", "B200", "--nodes", "8", "--pd",
                   "--requests", "512", "--context", "131072")
    assert f"{doc['best']} decode: python -m sglang.launch_server" in table.stdout
    for args, message in [([], "--pd: needs --nodes N"),
                          (["--nodes", "1"], "a prefill/decode split needs at least 2 nodes"),
                          (["--nodes", "4", "--gpu", "B200,H200"], "--pd: needs one --gpu"),
                          (["--nodes", "4", "--engine", "vllm"], "--engine sglang only")]:
        gpu = [] if "--gpu" in args else ["--gpu", "B200"]
        bad = invoke("recommend", "--model", DSV32, "--pd", "--requests", "8", "--context",
                     "1024", *gpu, *args)
        assert bad.exit_code == 2 and message in bad.output, bad.output
