"""`kvledger pools` through the real CLI."""

from __future__ import annotations

import json

import pytest
import torch
from typer.testing import CliRunner

from kvledger.cli import app

runner = CliRunner()


def pools_json(*args: str) -> dict:
    result = runner.invoke(app, ["pools", "--json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_glm_full_size_on_meta_matches_the_ledger():
    doc = pools_json("--device", "meta", "--kv-cache-dtype", "fp8_e4m3")
    assert doc["all_match"] and not doc["scaled"] and doc["full_size"] is None
    assert doc["built"] == doc["planned"] == {"max_total_tokens": 7_780_672, "state_slots": 343,
                                              "max_running_requests": 68, "page_tokens": 64}
    rows = {r["pool"]: r for r in doc["pools"]}
    assert list(rows) == ["full KV", "full index keys", "conv state", "temporal state",
                          "compress tail", "req_to_token"]
    assert rows["full KV"]["allocated_bytes"] == (7_780_672 + 64) * 5_808
    assert rows["temporal state"]["predicted_bytes"] == 344 * 34 * 4_194_304
    assert doc["total"]["allocated_bytes"] == doc["total"]["predicted_bytes"]


def test_cpu_default_is_scaled_and_still_exact():
    doc = pools_json("--tp", "8", "--kv-cache-dtype", "fp8_e4m3")
    assert doc["scaled"] and doc["all_match"]
    assert doc["built"]["max_total_tokens"] == 1_024 and doc["built"]["state_slots"] == 5
    assert all(r["allocated_bytes"] == r["predicted_bytes"] for r in doc["pools"])
    full = {r["pool"]: r for r in doc["full_size"]}
    assert full["full KV"]["allocated_bytes"] == (
        doc["planned"]["max_total_tokens"] + 64) * 5_808


def test_table_output_and_device_errors():
    result = runner.invoke(app, ["pools", "--model", "llama-3.1-8b"])
    assert result.exit_code == 0, result.output
    assert "full KV" in result.stdout and "req_to_token" in result.stdout
    if not torch.cuda.is_available():
        result = runner.invoke(app, ["pools", "--device", "cuda"])
        assert result.exit_code == 2 and "no CUDA device" in result.output
    result = runner.invoke(app, ["pools", "--device", "tpu"])
    assert result.exit_code == 2


@pytest.mark.parametrize("model", ["qwen3-next-80b-a3b-instruct", "deepseek-v3.2"])
def test_other_families_scaled(model):
    doc = pools_json("--model", model, "--tp", "8")
    assert doc["all_match"], doc["pools"]
