"""`kvledger replay --engine vllm` through the real CLI: its numbers are vLLM 0.33's own
(oracle copies in tests/data/vllm-0.33-prefix-cache, summary.json), and its bad inputs exit 2
with one error line naming the flag."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from kvledger.cli import app

runner = CliRunner()
DATA = Path(__file__).resolve().parents[1] / "data"
TRACE = str(DATA / "synthetic_trace.jsonl")
ORACLE = DATA / "vllm-0.33-prefix-cache"
ROWS = {(r["scenario"], r["run"]): r
        for r in json.loads((ORACLE / "summary.json").read_text())["rows"]}
S2_POOL = "1048576"


def invoke(*args: str):
    return runner.invoke(app, ["replay", "--trace", TRACE, "--no-progress", "--engine", "vllm",
                               *args])


def test_block_640_equals_vllm_and_writes_its_array(tmp_path):
    out = tmp_path / "hits.npy"
    result = invoke("--block-size", "640", "--pool-tokens", S2_POOL, "--json", "--out", str(out))
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["schema"] == "kvledger.replay/1" and doc["engine"] == "vllm"
    expected = ROWS[("S2", "hybrid-align@640")]
    for key in ("run", "num_blocks", "hit_tokens", "token_hit_rate", "fa_hit_tokens",
                "evicted_blocks_fa", "evicted_blocks_mamba", "junction_requests",
                "checkpoint_steps", "final_cached_mamba_states", "prefix_len_sha1"):
        assert doc[key] == expected[key], key
    written = np.load(out)
    assert written.dtype == np.dtype("<i4")
    assert np.array_equal(written, np.load(ORACLE / "synthetic.S2.hybrid-align_b640.npy"))


def test_the_table_names_the_cache():
    result = invoke("--block-size", "640", "--pool-tokens", S2_POOL)
    assert result.exit_code == 0, result.output
    assert "hybrid-align@640 (vLLM 0.33 block cache)" in result.stdout
    assert "the attention hit cut back to the deepest cached state" in result.stdout


@pytest.mark.slow
@pytest.mark.parametrize(("args", "run"), [
    (("--components", "full"), "full@64"),
    (("--retention", "dense"), "hybrid-align@64+dense"),
    (("--checkpoint-blocks", "0"), "hybrid-align@64+nockpt"),
    (("--scheduler", "sync"), "hybrid-align@64+sync"),
])
def test_each_variant_flag_gives_its_cell(args, run):
    result = invoke("--pool-tokens", S2_POOL, "--json", *args)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert (doc["run"], doc["prefix_len_sha1"]) == (run, ROWS[("S2", run)]["prefix_len_sha1"])


@pytest.mark.parametrize(("args", "flag"), [
    (("--pool-tokens", S2_POOL, "--state-slots", "4"), "--state-slots"),
    (("--pool-tokens", S2_POOL, "--page-size", "64"), "--page-size"),
    (("--pool-tokens", S2_POOL, "--checkpoints", "end"), "--checkpoints"),
    (("--pool-tokens", S2_POOL, "--match-key", "prompt"), "--match-key"),
    (("--pool-tokens", S2_POOL, "--rules", "sglang-0.5.23"), "--rules"),
    (("--pool-tokens", S2_POOL, "--gpu", "h200"), "--gpu"),
    (("--pool-tokens", S2_POOL, "--tp", "2"), "--tp"),
    (("--block-size", "64"), "--pool-tokens"),
    (("--pool-tokens", "0"), "--pool-tokens"),
    (("--pool-tokens", "640", "--block-size", "64"), "--pool-tokens"),  # a prompt won't fit
    (("--pool-tokens", S2_POOL, "--block-size", "-1"), "--block-size"),
    (("--pool-tokens", S2_POOL, "--retention", "soon"), "--retention"),
    (("--pool-tokens", S2_POOL, "--retention", "100"), "--retention"),
    (("--pool-tokens", S2_POOL, "--checkpoint-blocks", "2"), "--checkpoint-blocks"),
    (("--pool-tokens", S2_POOL, "--scheduler", "fast"), "--scheduler"),
    (("--pool-tokens", S2_POOL, "--components", "full", "--scheduler", "sync"), "--scheduler"),
    (("--pool-tokens", S2_POOL, "--mamba-groups", "0"), "--mamba-groups"),
    (("--pool-tokens", S2_POOL, "--components", "full", "--mamba-groups", "2"), "--mamba-groups"),
])
def test_bad_vllm_options_exit_2_naming_the_flag(args, flag):
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {flag}"), result.stderr


@pytest.mark.parametrize("flag", [("--block-size", "64"), ("--retention", "dense"),
                                  ("--checkpoint-blocks", "0"), ("--scheduler", "sync"),
                                  ("--mamba-groups", "4")])
def test_vllm_options_need_engine_vllm(flag):
    result = runner.invoke(app, ["replay", "--trace", TRACE, "--no-progress", "--pool-tokens",
                                 "100000", "--state-slots", "8", *flag])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {flag[0]}: a vLLM replay option; needs --engine vllm")
