"""`kvledger sweep --engine sglang,vllm`: one row per deployment and engine, for every model."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kvledger.cli import app
from kvledger.model.config import embedded_names
from kvledger.sglang.deploy import Deployment
from kvledger.sizing import Axes, sweep
from kvledger.sizing.vllm_point import vllm_deployment
from kvledger.vllm.deploy import VllmDeployment
from kvledger.vllm.plan import make_vllm_plan

runner = CliRunner()


@pytest.mark.parametrize("model", embedded_names())
def test_both_engines_every_model_plans_or_says_why(model):
    result = runner.invoke(app, ["sweep", "--model", model, "--gpu", "H200", "--tp", "8",
                                 "--dp", "1,4", "--engine", "sglang,vllm", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["engines"] == ["sglang", "vllm"]
    assert [r["engine"] for r in doc["rows"]] == ["sglang", "vllm"] * 2
    for row in doc["rows"]:
        assert row["ok"] != bool(row["error"])  # a refusal is the row's reason, not a crash
        if row["engine"] != "vllm" or not row["ok"]:
            continue
        # vLLM's own numbers: the plan of the same flags, DP engines × per-engine figures
        plan = make_vllm_plan(model, VllmDeployment(tensor_parallel_size=row["tp_size"],
                                                    data_parallel_size=row["dp_size"]),
                              gpu="H200")
        tot, eng = row["totals"], row["per_worker"]
        assert row["tp_size"] * row["dp_size"] == tot["ranks"] == 8
        assert eng["num_gpu_blocks"] == plan.capacity.num_blocks
        assert tot["tokens"] == row["dp_size"] * plan.capacity.logged_tokens
        assert tot["running_requests"] == row["dp_size"] * min(
            plan.capacity.max_num_seqs, int(plan.capacity.num_blocks
                                            / plan.capacity.blocks_per_request))
        assert tot["token_pool_bytes"] == (plan.capacity.num_blocks
                                           * plan.capacity.bytes_per_block * 8)
        assert row["binding"] in ("kv_blocks", "max_num_seqs")


def test_dp_attention_maps_to_vllm_data_parallel_on_the_same_gpus():
    v = vllm_deployment(Deployment(tp_size=8, dp_size=8, enable_dp_attention=True), 65_536)
    assert (v.tensor_parallel_size, v.data_parallel_size, v.max_model_len) == (1, 8, 65_536)
    v = vllm_deployment(Deployment(tp_size=8))
    assert (v.tensor_parallel_size, v.data_parallel_size) == (8, 1)


def test_qwen3_next_on_four_h200s_vllm_concurrency_is_for_max_model_len_requests():
    rows = sweep("qwen3-next-80b-a3b-instruct", Axes(gpus=("H200",), tp=(4,)),
                 engines=("sglang", "vllm"))
    sg, vl = rows
    plan = vl.plan
    # max_model_len is the config's 262,144: vLLM's "Maximum concurrency" is
    # num_gpu_blocks / blocks per such request (get_max_concurrency_for_kv_cache_config)
    assert plan.layout.max_model_len == 262_144
    assert vl.totals.running_requests == int(plan.capacity.num_blocks
                                             / plan.capacity.blocks_per_request)
    assert vl.totals.running_requests < sg.totals.running_requests
    assert vl.binding == "kv_blocks" and vl.totals.state_pool_bytes == 0


def test_a_workload_sets_max_model_len_and_checks_requests():
    rows = sweep("qwen3-next-80b-a3b-instruct", Axes(gpus=("H200",), tp=(4,)),
                 engines=("vllm",), requests=64, context_tokens=32_768)
    (row,) = rows
    assert row.plan.layout.max_model_len == 32_768
    assert row.fits == (row.totals.running_requests >= 64)


def test_vllm_refusal_is_the_rows_reason():
    # tp 1 × dp 4 holds Qwen3-Next's whole weights per rank: vLLM's budget refuses it
    rows = sweep("qwen3-next-80b-a3b-instruct",
                 Axes(gpus=("H200",), tp=(4,), dp=(4,)), engines=("vllm",))
    assert not rows[0].ok and "do not fit in --gpu-memory-utilization" in rows[0].error


@pytest.mark.parametrize("args, message", [
    (["--engine", "trtllm"], "--engine 'trtllm': expected sglang or vllm"),
    (["--engine", "vllm"], "--engine vllm: needs --gpu"),
    (["--engine", "sglang", "--rules", "vllm-0.33"], "a vllm rule set, but --engine is sglang"),
    (["--rules", "sglang-0.5.21,sglang-0.5.23"], "two rule sets for sglang"),
])
def test_engine_errors_name_the_flag(args, message):
    result = runner.invoke(app, ["sweep", *args])
    assert result.exit_code == 2 and message in result.output, result.output  # usage error


def test_rules_pick_one_set_per_engine():
    result = runner.invoke(app, ["sweep", "--gpu", "H200", "--tp", "8", "--engine",
                                 "sglang,vllm", "--rules", "vllm-0.13", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["rows"][1]["ok"]


@pytest.mark.parametrize("model", embedded_names())
def test_recommend_prints_vllms_command_when_its_plan_fits(model):
    from kvledger.model.config import REPO_IDS
    from kvledger.sizing import recommend
    from kvledger.vllm.flags import parse_vllm_command

    # Both engines' layouts: a model SGLang refuses (Jamba) is recommended vLLM's layouts.
    rec = recommend(model, requests=32, context_tokens=8_192, gpus=("H200",), top=3,
                    engines=("sglang", "vllm"))
    assert rec.fits, rec.failures
    for r in rec.fits:
        assert (r.vllm_command is None) != (r.vllm_why is None)
        vdep = vllm_deployment(r.row.point.deployment, 8_192)
        if r.engine == "vllm":
            assert r.command == r.vllm_command  # a vLLM fit: its own command
        if r.vllm_command is None:
            continue
        parsed = parse_vllm_command(r.vllm_command)  # the command parses back to the layout
        assert parsed.model_ref == REPO_IDS.get(model, model)
        assert parsed.deployment == vdep
        plan = make_vllm_plan(model, parsed.deployment, gpu="H200")
        assert plan.totals.running_requests >= 32
    result = runner.invoke(app, ["recommend", "--model", model, "--requests", "32",
                                 "--context", "8192", "--gpu", "H200", "--top", "3",
                                 "--engine", "sglang,vllm", "--json"])
    assert result.exit_code == 0, result.output
    fits = json.loads(result.stdout)["fits"]
    assert [f["engine"] for f in fits] == [r.engine for r in rec.fits]
    assert [f["command"] for f in fits] == [r.command for r in rec.fits]
    assert [f["vllm_command"] for f in fits] == [r.vllm_command for r in rec.fits]
    assert [f["vllm_why"] for f in fits] == [r.vllm_why for r in rec.fits]


def test_recommend_jamba_from_vllm_layouts():
    from kvledger.sizing import recommend

    # SGLang refuses Jamba (model_loader/utils.py, resolve_transformers_arch): every SGLang
    # layout fails with that reason, and vLLM's layouts are the recommendation.
    rec = recommend("jamba-1.5-mini", requests=32, context_tokens=8_192, gpus=("H200",),
                    top=3, engines=("sglang", "vllm"))
    assert rec.searched == 152  # 76 layouts (tp, DP attention, DCP, pp on tp 8) × 2 engines
    (why, refused), *others = rec.failures
    assert refused == 76 and "resolve_transformers_arch" in why and "use --engine vllm" in why
    # vLLM's own refusals of the DCP layouts, quoted (8 KV heads need tp > 8 for GQA DCP)
    assert sum(n for _, n in others) == 28 and all(
        w.startswith("--decode-context-parallel-size ") and "vLLM refuses it" in w
        for w, _ in others)
    best = rec.best
    assert best.engine == "vllm"
    assert best.command == ("vllm serve ai21labs/AI21-Jamba-1.5-Mini --max-model-len 8192 "
                            "--kv-cache-dtype fp8_e4m3")
    # vllm-0.33 on one H200: 27,126 blocks of 160 tokens; a max_model_len request takes 66
    # (get_max_concurrency_for_kv_cache_config: 27,126 / 66 = 411 requests), and the logged
    # "GPU KV cache size" is int(411 × 8,192) = 3,366,912 tokens (get_kv_cache_capacity).
    cap = best.row.plan.capacity
    assert (cap.num_blocks, cap.blocks_per_request, cap.max_concurrency) == (27_126, 66, 411.0)
    assert best.row.plan.layout.block_tokens == 160
    tot = best.row.totals
    assert (tot.ranks, tot.running_requests, tot.tokens) == (1, 411, 3_366_912)
    assert best.headroom == 411 / 32
    # cheapest first: one GPU (fp8, then bf16 KV: 231 requests), then two (max_num_seqs 1,024)
    assert [(r.row.totals.ranks, r.row.totals.running_requests) for r in rec.fits] == [
        (1, 411), (1, 231), (2, 1_024)]
    result = runner.invoke(app, ["recommend", "--model", "jamba-1.5-mini", "--requests", "32",
                                 "--context", "8192", "--gpu", "H200", "--engine", "vllm"])
    assert result.exit_code == 0, result.output
    assert f"#1 vLLM:   {best.command}" in result.stdout
    assert "SGLang:" not in result.stdout  # vLLM alone: no SGLang layout searched


def test_recommend_engine_and_rules_errors_name_the_flag():
    for args, message in [(["--engine", "trt"], "--engine 'trt': expected sglang or vllm"),
                          (["--engine", "vllm", "--rules", "sglang-0.5.23"],
                           "a sglang rule set, but --engine is vllm")]:
        result = runner.invoke(app, ["recommend", "--requests", "4", "--context", "1024",
                                     "--gpu", "H200", *args])
        assert result.exit_code == 2 and message in result.output, result.output


def test_recommend_says_why_vllm_does_not_fit():
    from kvledger.sizing import recommend

    rec = recommend("qwen3-next-80b-a3b-instruct", requests=64, context_tokens=32_768,
                    gpus=("H200",), top=3)
    # #1 is SGLang's DCP 2 on 2 GPUs, which vLLM refuses for a GQA model with 2 KV heads
    assert rec.fits[0].row.point.deployment.dcp_size == 2
    assert rec.fits[0].vllm_why == (
        "--decode-context-parallel-size 2: vLLM refuses it (Decode context parallelism for "
        "GQA/MQA requires `--tensor-parallel-size` (2) to be greater than the model's total "
        "number of KV heads (2))")
    # #3 is SGLang's DP attention on 2 GPUs: in vLLM two tp-1 engines, each with all weights
    assert rec.fits[2].row.point.deployment.enable_dp_attention
    assert rec.fits[2].vllm_command is None
    assert "148.40 GiB per rank do not fit" in rec.fits[2].vllm_why
    assert rec.fits[1].vllm_command == (
        "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --tensor-parallel-size 2 "
        "--max-model-len 32768 --kv-cache-dtype fp8_e4m3")


@pytest.mark.parametrize("model", embedded_names())
def test_compare_across_engines_every_model(model):
    result = runner.invoke(app, ["compare", "--model", model, "--a", "--tp 8 --gpu H200",
                                 "--b", "--tp 8 --gpu H200 --engine vllm", "--json"])
    if model == "jamba-1.5-mini":  # SGLang refuses Jamba (resolve_transformers_arch), side a
        assert result.exit_code == 2 and "use --engine vllm" in result.output, result.output
        return
    if result.exit_code != 0:  # vLLM refuses this layout: its reason, in the one error style
        assert result.exit_code == 2 and result.output.startswith("error: "), result.output
        with pytest.raises(ValueError):
            make_vllm_plan(model, VllmDeployment(tensor_parallel_size=8), gpu="H200")
        return
    doc = json.loads(result.stdout)
    rows = {r["quantity"]: r for r in doc["rows"]}
    assert (doc["a"]["engine"], doc["b"]["engine"]) == ("sglang", "vllm")
    assert rows["engine"]["differs"] and not rows["tp_size"]["differs"]
    plan = make_vllm_plan(model, VllmDeployment(tensor_parallel_size=8), gpu="H200")
    assert rows["num_gpu_blocks"]["b"] == plan.capacity.num_blocks
    assert rows["num_gpu_blocks"]["a"] is None and rows["state_slots"]["b"] is None
    assert rows["ranks"]["a"] == rows["ranks"]["b"] == 8


def test_compare_a_pasted_vllm_command_against_sglang():
    result = runner.invoke(app, [
        "compare", "--model", "qwen3-next-80b-a3b-instruct", "--a", "--tp 4 --gpu H200",
        "--b", "--engine vllm --gpu H200 vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct "
               "--tensor-parallel-size 2 --data-parallel-size 2",
        "--context", "32768", "--requests", "64", "--json"])
    assert result.exit_code == 0, result.output
    rows = {r["quantity"]: r for r in json.loads(result.stdout)["rows"]}
    assert rows["dp_size"]["b"] == 2 and rows["ranks"]["b"] == 4
    assert rows["max_model_len"]["b"] == 32_768  # --context sets vLLM's max_model_len
    plan = make_vllm_plan("qwen3-next-80b-a3b-instruct",
                          VllmDeployment(tensor_parallel_size=2, data_parallel_size=2,
                                         max_model_len=32_768), gpu="H200")
    running = 2 * min(plan.capacity.max_num_seqs, int(plan.capacity.max_concurrency))
    assert rows["running_requests"]["b"] == running
    assert rows["workload_fits"]["b"] == (running >= 64)


def test_compare_vllm_side_needs_a_gpu():
    result = runner.invoke(app, ["compare", "--a", "--tp 8 --gpu H200",
                                 "--b", "--tp 8 --engine vllm"])
    assert result.exit_code == 2 and "the side needs --gpu" in result.output


def test_replicas_without_dp_attention_multiply_one_copys_totals():
    # SGLang --dp-size R alone: DataParallelController.launch_dp_schedulers launches one
    # tp group per dp_rank (base_gpu_id += tp_size), each with its own pools: tp × R GPUs
    from kvledger.sglang.plan import make_plan

    rows = sweep("qwen3-next-80b-a3b-instruct", Axes(gpus=("H200",), tp=(4,), replicas=(1, 2)),
                 engines=("sglang", "vllm"))
    one, two = rows[0], rows[2]
    assert two.point.deployment.dp_size == 2 and not two.point.deployment.enable_dp_attention
    single = make_plan("qwen3-next-80b-a3b-instruct", two.point.deployment, gpu="H200")
    assert single.capacity.totals.ranks == 8  # the plan's own totals count every copy
    assert (two.totals.ranks, two.totals.workers) == (8, 2)
    assert two.totals.running_requests == 2 * one.totals.running_requests
    assert two.totals.tokens == 2 * one.totals.tokens
    assert two.totals.state_pool_bytes == 2 * one.totals.state_pool_bytes
    # vLLM: --tensor-parallel-size 4 --data-parallel-size 2
    vtwo = rows[3].plan.layout.deployment
    assert (vtwo.tensor_parallel_size, vtwo.data_parallel_size) == (4, 2)
    assert rows[3].totals.ranks == 8


def test_replicas_and_dp_attention_together_are_refused_by_flag():
    result = runner.invoke(app, ["sweep", "--gpu", "H200", "--tp", "8", "--dp", "2",
                                 "--replicas", "2", "--json"])
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)["rows"]
    assert not row["ok"] and "SGLang has one --dp-size" in row["error"]
    result = runner.invoke(app, ["sweep", "--gpu", "H200", "--tp", "4", "--replicas", "1,2",
                                 "--json"])
    rows = json.loads(result.stdout)["rows"]
    assert [(r["replicas"], r["totals"]["ranks"]) for r in rows] == [(1, 4), (2, 8)]
    assert rows[1]["dp_size"] == 2 and rows[1]["enable_dp_attention"] is False


def test_compare_rules_pick_one_set_per_sides_engine():
    result = runner.invoke(app, ["compare", "--a", "--tp 8 --gpu H200",
                                 "--b", "--tp 8 --gpu H200 --engine vllm",
                                 "--rules", "sglang-0.5.23,vllm-0.13", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert (doc["a"]["rules"], doc["b"]["rules"]) == ("sglang-0.5.23", "vllm-0.13")
    result = runner.invoke(app, ["compare", "--a", "--tp 8", "--b", "--tp 4",
                                 "--rules", "vllm-0.13"])
    assert result.exit_code == 2, result.output
    assert "--rules vllm-0.13: a vllm rule set, but --engine is sglang" in result.output
