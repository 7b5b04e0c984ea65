"""--kv-cache-memory-bytes as a kvledger option (vLLM's own flag: the KV cache's bytes per rank,
profiling skipped), for sweep, recommend and compare as for plan."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from kvledger.cli import app

runner = CliRunner()
QWEN = ("--model", "qwen3-next-80b-a3b-instruct")
BYTES = "40000000000"


def invoke(*args: str):
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result


def test_sweep_sizes_the_pool_from_the_given_bytes():
    doc = json.loads(invoke("sweep", "--engine", "vllm", *QWEN, "--gpu", "H200", "--tp", "2",
                            "--kv-cache-memory-bytes", BYTES, "--json").stdout)
    (row,) = doc["rows"]
    # 12 layers × 576-token pages of 589,824 B at TP 2 on an H200 (the tests/vllm layout)
    assert row["per_worker"]["num_gpu_blocks"] == 40_000_000_000 // (12 * 589_824) == 5_651
    plan = json.loads(invoke("plan", "--engine", "vllm", *QWEN, "--gpu", "H200", "--json",
                             "--", "-tp", "2", "--kv-cache-memory-bytes", BYTES).stdout)
    assert plan["capacity"]["num_blocks"] == 5_651


def test_recommend_writes_it_into_the_launch_line():
    out = invoke("recommend", "--engine", "vllm", *QWEN, "--requests", "4", "--context",
                 "8192", "--gpu", "H200", "--top", "1", "--kv-cache-memory-bytes", BYTES).stdout
    assert f"--kv-cache-memory-bytes {BYTES}" in out


def test_sglang_does_not_read_it():
    result = runner.invoke(app, ["sweep", *QWEN, "--gpu", "H200", "--kv-cache-memory-bytes",
                                 BYTES])
    assert result.exit_code == 2
    assert "error: --kv-cache-memory-bytes: vLLM's terms, not SGLang's" in result.output
