"""`kvledger simulate --engine vllm --compare` through the real CLI: every row runs the same
requests on the same pool bytes, vLLM's default row is plain `simulate --engine vllm`, and
the recommendation names one of vLLM's rows by its flags."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvledger.cli import app

runner = CliRunner()
TRACE = str(Path(__file__).resolve().parents[1] / "data" / "synthetic_trace.jsonl")
BASE = ("simulate", "--trace", TRACE, "--num-requests", "40", "--no-progress",
        "--model", "qwen3-next-80b-a3b-instruct", "--gpu", "h200", "--tp", "2",
        "--engine", "vllm")


@pytest.fixture(scope="module")
def doc() -> dict:
    result = runner.invoke(app, [*BASE, "--compare", "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.slow  # 13 serving runs of 40 requests
def test_the_default_row_is_plain_simulate_and_every_row_shares_the_pool_bytes(doc):
    assert doc["schema"] == "kvledger.simulate-vllm-compare/1"
    plain = runner.invoke(app, [*BASE, "--json"])
    assert plain.exit_code == 0, plain.output
    single = json.loads(plain.stdout)
    rows = doc["rows"]
    base = rows[0]
    assert base["label"] == "vLLM default" and base["flags"] == ""
    assert base["usable_hit"] == single["rates"]["usable_hit"]
    assert base["token_hit"] == single["rates"]["token_hit"]
    assert base["ttft_ms"]["p95"] == single["latency"]["ttft_ms"]["p95"]
    block, blocks = base["block_tokens"], base["num_blocks"]
    assert block == single["pools"]["block_tokens"] == 576
    # Qwen3-Next on an H200 exports prefill checkpoints (FlashInfer GDN): the flipped row is 0
    assert base["checkpoint_blocks"] == 1
    assert {r["label"] for r in rows} >= {"retention dense", f"retention {4 * block}",
                                          "checkpoint blocks 0", f"block {2 * block}",
                                          "ghost-junction + lru", "vllm + dead-first"}
    for r in rows:
        assert r["finished"] == 40 and r["usable_hit"] <= r["token_hit"]
        scale = r["block_tokens"] // block
        # the same pool bytes: blocks k times the size, ⌊available / (k · page)⌋ of them
        assert 0 <= blocks - r["num_blocks"] * scale < scale
        assert (r["kind"] == "vllm") == (r["admission"] == "vllm" and r["eviction"] == "lru")
        if r["kind"] == "vllm":
            assert (r["flags"] == "") == (r is base)
    pick = next(r for r in rows if r["label"] == doc["recommended"]["vllm"])
    assert pick["kind"] == "vllm"
    assert doc["recommendation"].startswith("recommend for synthetic_trace.jsonl: ")
    assert (pick["flags"] or "vLLM's defaults") in doc["recommendation"]


@pytest.mark.slow
def test_the_table_prints_every_row_and_the_recommendation():
    result = runner.invoke(app, [*BASE, "--compare", "--num-requests", "10"])
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "vLLM's knobs and kvledger's state policies on synthetic_trace.jsonl" in out
    for label in ("vLLM default", "retention dense", "junction-only + lru"):
        assert label in out
    assert "recommend for synthetic_trace.jsonl:" in out


def test_compare_with_both_engines_is_refused():
    result = runner.invoke(app, [*BASE[:-1], "sglang,vllm", "--compare"])
    assert result.exit_code == 2
    assert "one engine at a time" in result.output
