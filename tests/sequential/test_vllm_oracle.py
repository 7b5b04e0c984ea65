"""vLLM 0.33's own prefix cache on the synthetic trace, request by request (all 16 cells).

The reference arrays and summary.json are copies of `oracle/vllm-0.33-prefix-cache/`
(vLLM 0.33.0's `KVCacheManager` → `UnitaryKVCacheCoordinator` / `HybridKVCacheCoordinator`
→ `FullAttentionManager` / `MambaManager` → one `BlockPool`, driven in its scheduler's
order on CPU; see tests/data/vllm-0.33-prefix-cache/README.md). kvledger's block cache
must give the same hit, attention-only hit and step count for every request and the same
summary counters. Two small cells run by default; the whole set is `slow` (about 60 s).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kvledger.sequential.vllm_oracle import vllm_oracle_cells
from kvledger.sequential.vllm_replay import vllm_replay
from kvledger.sequential.vllm_summary import vllm_summary
from kvledger.sim.trace import parse_trace_lines

DATA = Path(__file__).resolve().parents[1] / "data"
ORACLE = DATA / "vllm-0.33-prefix-cache"
CELLS = vllm_oracle_cells(ORACLE)
QUICK = {"S2 hybrid-align@640", "S1 hybrid-align@640"}
COUNTERS = ("requests", "prompt_tokens", "hit_tokens", "token_hit_rate", "fa_hit_tokens",
            "fa_token_hit_rate", "requests_with_hit", "evicted_blocks_fa",
            "evicted_blocks_mamba", "evicted_tokens_fa", "multi_step_prefills", "max_steps",
            "checkpoint_steps", "junction_requests", "final_cached_blocks",
            "final_cached_mamba_states", "final_free_uncached", "num_blocks", "prefix_len_sha1")


@pytest.fixture(scope="module")
def requests():
    with (DATA / "synthetic_trace.jsonl").open(encoding="utf-8") as handle:
        return parse_trace_lines(handle, source="synthetic_trace.jsonl")


def test_all_sixteen_cells_are_listed():
    assert len(CELLS) == 16
    assert {c.spec.block_tokens for c in CELLS} == {16, 64, 640}
    assert {c.spec.run_name for c in CELLS} == {c.run for c in CELLS}


def _check(cell, requests) -> None:
    out = vllm_replay(requests, cell.spec)
    expected = cell.arrays(ORACLE)
    differ = np.flatnonzero(out.hits != expected["hits"])
    assert differ.size == 0, f"{differ.size} requests differ, first {differ[:5].tolist()}"
    if cell.spec.has_state:
        assert np.array_equal(out.attention_hits, expected["fa_hit"])
        assert np.array_equal(out.steps, expected["steps"])
    else:
        assert np.array_equal(out.attention_hits, out.hits)
    doc = vllm_summary(out)
    assert {k: doc[k] for k in COUNTERS} == {k: cell.expected[k] for k in COUNTERS}


@pytest.mark.parametrize("cell", [c for c in CELLS if c.name in QUICK],
                         ids=lambda c: c.name)
def test_small_cell_is_identical_to_vllm(cell, requests):
    _check(cell, requests)


@pytest.mark.slow
@pytest.mark.parametrize("cell", [c for c in CELLS if c.name not in QUICK],
                         ids=lambda c: c.name)
def test_cell_is_identical_to_vllm(cell, requests):
    _check(cell, requests)
