"""`kvledger replay` through the real CLI: its numbers are SGLang 0.5.23's own (oracle copies
in tests/data/sglang-0.5.23-tree, summary.json)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from kvledger.cli import app

runner = CliRunner()
DATA = Path(__file__).resolve().parents[1] / "data"
TRACE = str(DATA / "synthetic_trace.jsonl")
ORACLE = DATA / "sglang-0.5.23-tree"
S1_BRANCH = next(c for c in json.loads((ORACLE / "summary.json").read_text())
                 if (c["scenario"], c["run"]) == ("S1", "mamba-rust@64+branch"))


def invoke(*args: str):
    return runner.invoke(app, ["replay", "--trace", TRACE, "--no-progress", *args])


def test_plan_flags_size_the_pools_and_json_carries_the_oracles_summary(tmp_path):
    """GLM-5.3-Flash at --available-gib 60 under the default (0.5.21) rules plans 64-token
    pages, T = 4,670,784 and K = 205: the oracle's S1 (0.5.23's DSA page would be 256 tokens).
    Both releases share the tree rules (UnifiedTreeCore), so SGLang 0.5.23's hits come out."""
    out = tmp_path / "hits.npy"
    result = invoke("--available-gib", "60", "--json", "--out", str(out))
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert (doc["pool_tokens"], doc["state_slots"], doc["page_size"]) == (4_670_784, 205, 64)
    for key in ("hit_tokens", "token_hit_rate", "full_kv_hit_tokens", "evict_calls",
                "evicted_tokens", "evicted_states", "branching_checkpoints",
                "state_already_present", "final_cached_tokens", "final_cached_states",
                "prefix_len_sha1"):
        assert doc[key] == S1_BRANCH[key], key
    assert doc["out"] == str(out)
    written = np.load(out)
    assert written.dtype == np.dtype("<i4")
    assert np.array_equal(written, np.load(ORACLE / "synthetic.S1.mamba-rust_p64+branch.npy"))


def test_pool_sizes_replay_a_full_only_tree():
    result = invoke("--pool-tokens", "1048576", "--components", "full", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["run"] == "radix@64" and doc["state_slots"] is None
    s2 = next(c for c in json.loads((ORACLE / "summary.json").read_text())
              if (c["scenario"], c["run"]) == ("S2", "radix@64"))
    assert (doc["hit_tokens"], doc["evict_calls"], doc["prefix_len_sha1"]) == (
        s2["hit_tokens"], s2["evict_calls"], s2["prefix_len_sha1"])


def test_a_dense_model_replays_full_only_from_its_plan():
    result = invoke("--model", "llama-3.1-8b", "--available-gib", "120", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["run"].startswith("radix@") and doc["mamba_checkpoints"] is None
    assert doc["hit_tokens"] > 0 and doc["evicted_states"] is None


def test_table_output_names_the_rules_and_the_plan():
    result = invoke("--available-gib", "60", "--checkpoints", "end", "--match-key",
                    "prompt-minus-one")
    assert result.exit_code == 0, result.output
    assert "mamba@64 (sglang-0.5.21 tree rules)" in result.stdout
    assert "plan: glm-5.3-flash, 4,670,784 KV tokens, 205 state slots" in result.stdout


@pytest.mark.parametrize(("args", "message"), [
    (("--pool-tokens", "1000", "--components", "full", "--state-slots", "4"),
     "--state-slots: a --components full replay has no state pool"),
    (("--pool-tokens", "100000"), "--state-slots: a full\\+mamba replay with --pool-tokens"),
    (("--state-slots", "4"), "--state-slots: needs --pool-tokens"),
    (("--pool-tokens", "100000", "--state-slots", "4", "--gpu", "h200"),
     "--pool-tokens: give the pool sizes or a plan's flags, not both"),
    (("--pool-tokens", "100000", "--state-slots", "1"),
     "--state-slots 1: a full\\+mamba replay with --checkpoints branch needs at least 2"),
    (("--pool-tokens", "10", "--state-slots", "4"), "--pool-tokens 10: less than one 64-token"),
    (("--pool-tokens", "1000", "--state-slots", "4", "--page-size", "0"),
     "--page-size 0: expected a positive integer"),
    (("--pool-tokens", "1000", "--components", "full", "--checkpoints", "branch"),
     "--checkpoints branch: needs --components full\\+mamba"),
    (("--model", "llama-3.1-8b", "--available-gib", "20", "--components", "full+mamba"),
     "--components full\\+mamba: llama-3.1-8b has no linear-attention layers"),
    (("--pool-tokens", "100000", "--state-slots", "4", "--out", "hits.txt"),
     "--out hits.txt: expected a .npy file name"),
    (("--pool-tokens", "64", "--state-slots", "4"),  # request 0: 40,160 tokens, 628 pages
     "request 0: needs 40,192 more KV tokens and 1 state slot\\(s\\); 64 tokens and 4 slot"),
])
def test_bad_flags_are_one_clear_error(args, message):
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert "error:" in result.stderr and "Traceback" not in result.output
    assert re.search(message, result.stderr.replace("\n", " ")), result.stderr


def test_a_bad_trace_line_names_the_line(tmp_path):
    bad = tmp_path / "t.jsonl"
    bad.write_text('{"timestamp": 0, "input_length": 600, "output_length": 1, "hash_ids": [1]}\n')
    result = runner.invoke(app, ["replay", "--trace", str(bad), "--pool-tokens", "4096",
                                 "--state-slots", "4", "--no-progress"])
    assert result.exit_code == 2
    assert "t.jsonl line 1: field 'hash_ids' has 1 ids but input_length 600" in result.stderr
