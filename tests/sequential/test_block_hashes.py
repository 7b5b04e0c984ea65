"""Per-segment block hashes name blocks exactly as chaining the block keys one by one
(`BlockHashChain` over `PromptKeyer`), on random prompts sharing segments: two blocks get
the same hash under one scheme iff they do under the other."""

from __future__ import annotations

import numpy as np
import pytest

from kvledger.blocks import BlockHashChain
from kvledger.sequential.block_hashes import PromptBlockHashes
from kvledger.sequential.keys import PromptKeyer
from kvledger.sim.workload import Request


def _requests(seed: int) -> list[Request]:
    rng = np.random.default_rng(seed)
    out = []
    for rid in range(60):
        n = int(rng.integers(1, 6))
        ids = tuple(int(i) for i in rng.integers(0, 4, n))  # few ids: many shared prefixes
        last = int(rng.integers(1, 513))
        out.append(Request(rid=rid, arrival_ms=0.0, segment_ids=ids,
                           segment_tokens=(512,) * (n - 1) + (last,), output_tokens=1))
    return out


@pytest.mark.parametrize("block_tokens", [16, 64, 128, 512, 640])
def test_per_segment_hashes_have_the_chained_keys_equality(block_tokens):
    requests = _requests(block_tokens)
    fast = PromptBlockHashes(block_tokens)
    keyer, chain = PromptKeyer(block_tokens), BlockHashChain()
    ours = [h for r in requests for h in fast.hashes(r)]
    chained = [h for r in requests for h in chain.hashes(keyer.keys(r).tolist())]
    assert len(ours) == len(chained) == sum(r.prompt_tokens // block_tokens for r in requests)
    # a bijection between the two namings: equal under one iff equal under the other
    pairs = set(zip(ours, chained, strict=True))
    assert len(pairs) == len(set(ours)) == len(set(chained))
    assert len(set(chained)) < len(chained)  # the prompts do share blocks
