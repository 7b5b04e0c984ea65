"""Prompt page keys against the oracle's token expansion: two full pages get one key exactly
when their tokens are equal, for page sizes that divide the 512-token block and for those
that straddle blocks (vLLM's 640, 576, 192 or 4128), on random prompts sharing blocks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvledger.sequential.keys import PromptKeyer
from kvledger.sim.workload import Request

MOD = 2_000_000_000  # oracle/sglang-0.5.23-tree/README.md: token p is (H[p//512]·512 + p%512) % MOD + 1


def _tokens(request: Request) -> np.ndarray:
    p = np.arange(request.prompt_tokens)
    ids = np.asarray(request.segment_ids, dtype=np.int64)
    return (ids[p // 512] * 512 + p % 512) % MOD + 1


@st.composite
def prompts(draw):
    out = []
    for rid in range(draw(st.integers(2, 12))):
        blocks = draw(st.lists(st.integers(0, 5), min_size=1, max_size=5))
        last = draw(st.integers(1, 512))
        out.append(Request(rid=rid, arrival_ms=0.0, segment_ids=tuple(blocks),
                           segment_tokens=(512,) * (len(blocks) - 1) + (last,),
                           output_tokens=1))
    return out


@pytest.mark.parametrize("page", [1, 64, 100, 192, 576, 640, 1536])
@given(requests=prompts())
@settings(max_examples=40, deadline=None)
def test_keys_are_equal_exactly_when_the_tokens_are(page, requests):
    keyer = PromptKeyer(page)
    seen: dict[bytes, int] = {}
    for request in requests:
        keys = keyer.keys(request)
        tokens = _tokens(request)
        assert len(keys) == request.prompt_tokens // page
        for j, key in enumerate(keys.tolist()):
            content = tokens[j * page:(j + 1) * page].tobytes()
            assert seen.setdefault(content, key) == key  # equal tokens, equal key
        assert len(set(seen.values())) == len(seen)  # different tokens, different keys
