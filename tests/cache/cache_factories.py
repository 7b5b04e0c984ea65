"""The facade in both modes over the same small geometry, and a driver for one request.

Real bytes: the tiny model's torch pools, the tree keys tokens. Accounting: numpy page ids,
the tree keys whole pages (one interned key per page of token ids, as the simulator's
`PageKeyer` does). Both: page 16, a 16-token checkpoint grid, 3 held slots per request
(extra_buffer with overlap: working + ping-pong pair, mamba_strategy.state_slots_per_request).
"""

from __future__ import annotations

import numpy as np

from kvledger.cache import CheckpointMode, HybridCache, Shortfall
from kvledger.cache.hicache_tier import HiCacheTier
from kvledger.cache.page_rows import PageRows
from kvledger.cache.policies import StatePolicies
from kvledger.cache.token_rows import TokenRows
from kvledger.engine.config import TinyConfig
from kvledger.engine.memory import HostTier, PoolSizes, build_device_pools, build_host_tier
from kvledger.pools.ids import StateSlotAllocator
from kvledger.tree import FULL_ONLY, RadixTree

PAGE = 16
HELD = 3


def real_cache(*, num_pages: int = 12, num_state_slots: int = 12, num_rows: int = 3,
               host: HostTier | None = None,
               policies: StatePolicies | None = None) -> HybridCache:
    pools = build_device_pools(TinyConfig(), PoolSizes(
        num_pages=num_pages, page_tokens=PAGE, num_state_slots=num_state_slots,
        max_running_requests=num_rows, max_context_tokens=128))
    tree = RadixTree(page_size=PAGE, mamba_chunk_tokens=PAGE)
    tier = None if host is None else HiCacheTier(build_host_tier(pools, tree, host), unit_tokens=1)
    return HybridCache(rows=TokenRows(pools.kv, pools.token_allocator), tree=tree,
                       states=pools.state_allocator, held_slots_per_request=HELD,
                       mode=CheckpointMode.TRACKED, host=tier, policies=policies)


def accounting_cache(*, num_pages: int = 12, num_state_slots: int = 12,
                     num_rows: int = 3, policies: StatePolicies | None = None) -> HybridCache:
    return HybridCache(rows=PageRows(num_pages=num_pages, page_tokens=PAGE, num_rows=num_rows),
                       tree=RadixTree(page_size=1, mamba_chunk_tokens=1),
                       states=StateSlotAllocator(num_slots=num_state_slots),
                       held_slots_per_request=HELD, mode=CheckpointMode.TRACKED,
                       policies=policies)


def dense_cache(*, num_pages: int = 12, num_rows: int = 3) -> HybridCache:
    """Accounting mode without a state component (a dense model: SGLang's RadixCache)."""
    return HybridCache(rows=PageRows(num_pages=num_pages, page_tokens=PAGE, num_rows=num_rows),
                       tree=RadixTree(page_size=1, components=FULL_ONLY), states=None,
                       held_slots_per_request=0, mode=CheckpointMode.NONE)


class Keys:
    """Tree keys of token sequences for one cache: the tokens themselves, or page keys."""

    def __init__(self, cache: HybridCache) -> None:
        self.per_page = cache.unit == PAGE
        self.interned: dict[bytes, int] = {}

    def __call__(self, tokens: np.ndarray) -> np.ndarray:
        if not self.per_page:
            return tokens
        pages = tokens[: len(tokens) // PAGE * PAGE].reshape(-1, PAGE)
        return np.array([self.interned.setdefault(p.tobytes(), len(self.interned))
                         for p in pages], dtype=np.int64)


def run_request(cache: HybridCache, keys: Keys, prompt: np.ndarray, new: int, chunk: int = 16):
    """One request to the end: prefill in chunks, decode `new` − 1 fed tokens, release.
    Returns its usable hit (tokens)."""
    seq = cache.admit(keys(prompt), prompt_tokens=len(prompt), final_tokens=len(prompt) + new - 1)
    assert not isinstance(seq, Shortfall), seq
    hit = seq.usable_hit_tokens
    tokens = np.concatenate([prompt, np.full(new, 99)])
    k = keys(tokens)
    while seq.computed_tokens < len(prompt) + new - 1:
        left = len(prompt) - seq.computed_tokens
        n = min(chunk, left) if left > 0 else 1
        cache.extend(seq, n)
        # SGLang caches a prefill forward unless the request finishes with it
        cache.commit(seq, k, n, cache_unfinished=left > n or (left > 0 and new > 1))
        cache.check_integrity()
    cache.release(seq, k)
    cache.check_integrity()
    return hit
