"""`kvledger plan --engine vllm` and `--engine sglang,vllm` through the real CLI."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from kvledger.cli import app

runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, ["plan", *args])


def test_pasted_vllm_serve_gives_the_issues_numbers():
    r = run("--json", "--rules", "vllm-0.13", "--available-gib", "44.59", "--",
            "vllm", "serve", "Qwen/Qwen3-Next-80B-A3B-Instruct", "-tp", "2", "--port", "8000")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["schema"] == "kvledger.vllm-plan/1" and doc["rules"] == "vllm-0.13"
    assert doc["capacity"]["logged_tokens"] == 973_760
    assert round(doc["capacity"]["max_concurrency"], 2) == 14.77
    assert doc["layout"]["block_tokens"] == 544 and doc["ignored_flags"] == ["--port"]


def test_table_output_names_the_blocks_and_the_loss():
    r = run("--engine", "vllm", "--model", "qwen3-next-80b-a3b-instruct", "--gpu", "h200",
            "--weights-gib", "74.5", "-tp", "2")
    assert r.exit_code == 0, r.output
    assert "num_gpu_blocks" in r.output and "Mamba page padding" in r.output


def test_side_by_side_json_carries_both_plans():
    r = run("--engine", "sglang,vllm", "--model", "qwen3-next-80b-a3b-instruct", "--gpu", "h200",
            "--tp", "2", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["schema"] == "kvledger.engines/1"
    assert doc["sglang"]["schema"] == "kvledger.plan/2"
    assert doc["vllm"]["deployment"]["tensor_parallel_size"] == 2
    quantities = [row["quantity"] for row in doc["rows"]]
    assert "bytes lost to padding or reservation" in quantities
    assert "binding constraint" in quantities


def test_side_by_side_table():
    r = run("--engine", "sglang,vllm", "--gpu", "h200", "--", "vllm", "serve",
            "Qwen/Qwen3-Next-80B-A3B-Instruct", "-tp", "2", "--max-model-len", "65536")
    assert r.exit_code == 0, r.output
    assert "SGLang" in r.output and "vLLM" in r.output and "65,536" in r.output


def test_engine_errors_are_one_line_exit_2():
    for args, message in [
        (("--engine", "trt"), "--engine 'trt'"),
        (("--engine", "sglang", "--rules", "vllm-0.13"), "a vllm rule set, but --engine"),
        (("--rules", "vllm-9"), "--rules 'vllm-9'"),
        (("--engine", "sglang,vllm", "--available-gib", "40"), "side by side needs --gpu"),
        (("--engine", "vllm", "--available-gib", "1", "--model", "llama-3.1-8b"),
         "estimated maximum model length"),
    ]:
        r = run(*args)
        assert r.exit_code == 2, (args, r.output)
        assert message in r.output and "Traceback" not in r.output


def test_the_issues_pipeline_and_dcp_commands_plan():
    # kvledger issue 24: both exited 2 ("not modelled by kvledger's vLLM rules (only 1)").
    # GLM-5.3-Flash on H200s; the stage and DCP arithmetic is tests/vllm/test_pipeline.py's and
    # test_context_parallel.py's, checked against vLLM 0.33.0's own planning (tests/oracle).
    pp = run("--engine", "vllm", "--gpu", "H200", "--tp", "4", "--pipeline-parallel-size", "2",
             "--json")
    assert pp.exit_code == 0, pp.output
    doc = json.loads(pp.stdout)
    stages = doc["pipeline"]["stages"]
    assert [s["bytes_per_block"] for s in stages] == [6_116_352, 7_332_864]
    assert doc["pipeline"]["binding_stage"] == 1 == stages[1]["pp_rank"]
    assert stages[0]["num_blocks"] == stages[1]["num_blocks"] == doc["capacity"]["num_blocks"]
    assert stages[0]["trimmed_blocks"] == stages[0]["own_num_blocks"] - stages[0]["num_blocks"]
    assert doc["totals"]["ranks"] == 8
    assert doc["totals"]["token_pool_bytes"] == 4 * sum(s["pool_bytes"] for s in stages)
    dcp = run("--engine", "vllm", "--gpu", "H200", "--tp", "8",
              "--decode-context-parallel-size", "2", "--json")
    assert dcp.exit_code == 0, dcp.output
    doc = json.loads(dcp.stdout)
    # cdiv(cdiv(1,048,576, 2), 640) attention blocks + 4 KDA groups × 3 + the kpool tail
    assert doc["capacity"]["blocks_per_request"] == 820 + 12 + 1
    assert doc["layout"]["dcp_size"] == 2 and doc["layout"]["rank_tokens_per_request"] == 524_288
    assert doc["pipeline"] is None and doc["totals"]["ranks"] == 8
    table = run("--engine", "vllm", "--gpu", "H200", "-tp", "4", "-pp", "2")
    assert table.exit_code == 0, table.output
    assert "Pipeline stages" in table.output and "PP1 ← binds" in table.output
