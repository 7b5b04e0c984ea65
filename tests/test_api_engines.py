"""The Python API on par with the CLI (issue 21): vLLM plans, `to_json()` on every result giving
the CLI's `--json` document, and rows without a plan that say why instead of asserting.

Numbers are kvledger's own planners' (Qwen3-Next-80B on H200s; tests/vllm holds the goldens
against vLLM's logs)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import kvledger
from kvledger.cli import app
from kvledger.core.engines import Engine
from kvledger.core.plan import EnginePlan
from kvledger.sizing import NotPlanned
from kvledger.vllm.deploy import VllmDeployment
from kvledger.vllm.plan import VllmPlan, make_vllm_plan

runner = CliRunner()
QWEN = "qwen3-next-80b-a3b-instruct"


def cli_json(*args: str) -> dict:
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_plan_takes_engine_vllm_and_a_pasted_vllm_serve():
    flagged = kvledger.plan(QWEN, "--tensor-parallel-size 2", engine="vllm", gpu="H200")
    pasted = kvledger.plan(flags="vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 2",
                           gpu="H200")
    direct = make_vllm_plan(QWEN, VllmDeployment(tensor_parallel_size=2), gpu="H200")
    for p in (flagged, pasted):
        assert isinstance(p, VllmPlan) and p.engine is Engine.VLLM
        assert p.capacity == direct.capacity and p.totals == direct.totals
    assert pasted.model.name == "Qwen/Qwen3-Next-80B-A3B-Instruct"
    assert pasted.launch_command() == "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct " \
                                      "--tensor-parallel-size 2"
    # a vLLM rule set implies the engine too; vLLM's terms are keywords
    old = kvledger.plan(QWEN, "-tp 2", rules="vllm-0.13", available_gib=44.59)
    assert old.capacity.num_blocks == 7_162  # the vLLM 0.13 log (tests/vllm)
    tuned = kvledger.plan(QWEN, "-tp 2", engine="vllm", gpu="H200", activation_gib=2,
                          gpu_memory_utilization=0.85)
    assert tuned.capacity.num_blocks < direct.capacity.num_blocks
    with pytest.raises(ValueError, match="one engine per plan"):
        kvledger.plan(QWEN, engine="sglang,vllm", gpu="H200")
    with pytest.raises(ValueError, match="--activation-gib"):
        kvledger.plan(QWEN, "--tp 2", gpu="H200", activation_gib=2)  # SGLang has no such term


def test_every_plan_answers_the_engine_plan_interface():
    sglang = kvledger.plan(QWEN, "--tp 2", gpu="H200", context=32_768)
    vllm = kvledger.plan(QWEN, "-tp 2", engine="vllm", gpu="H200", context=32_768)
    # vLLM 0.33: 8,338 blocks, 57 + 3 × 3 per 32,768-token request (GDN prefill checkpoint)
    for p, requests in ((sglang, 72), (vllm, 126)):
        plan: EnginePlan = p
        assert plan.fit_at().requests == requests  # the workload's length by default
        assert plan.fits(requests, 32_768) and not plan.fits(requests + 1, 32_768)
        assert plan.totals.ranks == 2 and plan.notes
        assert plan.pools.total_bytes > 0 and plan.ledgers_by_name()
    assert sglang.pools.total_bytes == (sglang.capacity.token_pool_bytes
                                        + sglang.capacity.state_pool_bytes)
    assert vllm.pools.total_bytes == vllm.capacity.num_blocks * vllm.capacity.bytes_per_block
    with pytest.raises(ValueError, match="memory system builds SGLang's pools"):
        kvledger.simulate(vllm)


def test_to_json_is_the_clis_document():
    assert kvledger.plan(QWEN, "-tp 2", engine="vllm", gpu="H200").to_json() == cli_json(
        "plan", "--engine", "vllm", "--model", QWEN, "--gpu", "H200", "-tp", "2")
    assert kvledger.plan(QWEN, "--tp 2", gpu="H200", requests=8).to_json() == cli_json(
        "plan", "--model", QWEN, "--gpu", "H200", "--requests", "8", "--tp", "2")
    rows = kvledger.sweep(QWEN, gpu="H200", tp=[2, 4], engine="sglang,vllm", context=32_768)
    assert rows.to_json() == cli_json("sweep", "--model", QWEN, "--gpu", "H200", "--tp", "2,4",
                                      "--engine", "sglang,vllm", "--context", "32768")
    a = kvledger.plan(QWEN, "--tp 2", gpu="H200")
    b = kvledger.plan(QWEN, "--tensor-parallel-size 2", engine="vllm", gpu="H200")
    assert kvledger.compare(a, b).to_json() == cli_json(
        "compare", "--model", QWEN, "--a", "--tp 2 --gpu H200",
        "--b", "--tp 2 --gpu H200 --engine vllm")
    rec = kvledger.recommend(QWEN, requests=16, context=8_192, gpu="H200", top=2,
                             engine="sglang,vllm")
    assert rec.to_json() == cli_json("recommend", "--model", QWEN, "--requests", "16",
                                     "--context", "8192", "--gpu", "H200", "--top", "2",
                                     "--engine", "sglang,vllm")
    assert rec.to_json()["notes"] == list(rec.notes) and rec.notes


def test_a_row_without_a_plan_says_why():
    rows = kvledger.sweep(QWEN, gpu="H200", tp=1, engine="sglang,vllm")
    failed = [r for r in rows if not r.ok]
    assert failed and all(r.plan is None and r.error for r in failed)
    for row in failed:
        with pytest.raises(NotPlanned, match="was not planned: ") as caught:
            row.totals  # noqa: B018 (the property is the call under test)
        assert row.error in str(caught.value)
        with pytest.raises(NotPlanned):
            row.binding  # noqa: B018
        assert row.fits is None and row.notes == ()
    assert issubclass(NotPlanned, ValueError)  # the CLI's one-line error path catches it
