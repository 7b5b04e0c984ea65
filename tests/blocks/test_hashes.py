"""Chained block hashes (`vllm/v1/core/kv_cache_utils.py`: `hash_block_tokens`): a block's
hash names its whole prefix, so equal blocks after different prefixes differ."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kvledger.blocks import BlockHashChain


def test_equal_blocks_after_different_prefixes_get_different_hashes():
    chain = BlockHashChain()
    a, b = chain.hashes([1, 2]), chain.hashes([3, 2])
    assert a[1] != b[1] and chain.hashes([1, 2]) == a
    chain.check_integrity()


@given(st.lists(st.lists(st.integers(0, 3), max_size=6), max_size=8))
def test_hashes_agree_exactly_when_prefixes_do(prompts):
    chain = BlockHashChain()
    named = [chain.hashes(p) for p in prompts]
    for p, hp in zip(prompts, named, strict=True):
        for q, hq in zip(prompts, named, strict=True):
            for j in range(min(len(p), len(q))):
                assert (hp[j] == hq[j]) == (p[: j + 1] == q[: j + 1])
    chain.check_integrity()
