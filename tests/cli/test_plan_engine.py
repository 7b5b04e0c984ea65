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
