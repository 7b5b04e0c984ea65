"""SGLang 0.5.23's own trees on the synthetic trace, request by request (all 15 cells).

The reference arrays and summary.json are copies of `oracle/sglang-0.5.23-tree/` (SGLang
0.5.23's RadixCache and UnifiedRadixCache, FULL+MAMBA, replayed sequentially on CPU; see
tests/data/sglang-0.5.23-tree/README.md). kvledger's tree under the `sglang-0.5.23` rules
must give the same hit and KV-only hit for every request and the same summary counters.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from kvledger.sequential.oracle import oracle_cells
from kvledger.sequential.replay import replay
from kvledger.sequential.summary import summary
from kvledger.sim.trace import TRACE_PAGE_TOKENS, parse_trace_lines

DATA = Path(__file__).resolve().parents[1] / "data"
ORACLE = DATA / "sglang-0.5.23-tree"
CELLS = oracle_cells(ORACLE)
COUNTERS = ("requests", "prompt_tokens", "hit_tokens", "token_hit_rate", "full_kv_hit_tokens",
            "evict_calls", "evicted_tokens", "evicted_states", "branching_checkpoints",
            "state_already_present", "final_cached_tokens", "final_cached_states",
            "prefix_len_sha1")


@pytest.fixture(scope="module")
def requests():
    with (DATA / "synthetic_trace.jsonl").open(encoding="utf-8") as handle:
        return parse_trace_lines(handle, source="synthetic_trace.jsonl")


def test_the_trace_expands_to_the_oracles_tokens(requests):
    """The README's expansion, token p = (H[p // 512]·512 + p % 512) % MOD + 1, hashed over
    every prompt as little-endian int64, gives the digest the oracle was computed on."""
    mod, digest = 2_000_000_000, hashlib.sha1()
    offsets = np.arange(TRACE_PAGE_TOKENS, dtype=np.int64)
    for r in requests:
        ids = np.asarray(r.segment_ids, dtype=np.int64)
        tokens = ((ids[:, None] * TRACE_PAGE_TOKENS + offsets) % mod + 1).reshape(-1)
        digest.update(tokens[: r.prompt_tokens].astype("<i8").tobytes())
    assert len(requests) == 3_993 and sum(r.prompt_tokens for r in requests) == 61_194_628
    assert digest.hexdigest() == "d9ad79255c06b1b9cb52d33ada130f6ef666a268"


def test_all_fifteen_cells_are_listed():
    assert len(CELLS) == 15
    assert {c.spec.page_tokens for c in CELLS} == {1, 64}


@pytest.mark.parametrize("cell", CELLS, ids=[c.name for c in CELLS])
def test_cell_is_identical_to_sglang(cell, requests):
    out = replay(requests, cell.spec)
    hits, kv_hits = cell.arrays(ORACLE)
    differ = np.flatnonzero(out.hits != hits)
    assert differ.size == 0, f"{differ.size} requests differ, first {differ[:5].tolist()}"
    if kv_hits is not None:
        assert np.array_equal(out.kv_hits, kv_hits)
    doc = summary(out)
    assert {k: doc[k] for k in COUNTERS} == {k: cell.expected[k] for k in COUNTERS}
