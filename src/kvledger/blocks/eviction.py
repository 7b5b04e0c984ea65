"""Eviction order on vLLM's block cache: where a finished request's blocks enter the free
queue, and so which cached blocks the pool drops first.

vLLM 0.33 evicts lazily from one LRU queue (`BlockPool.get_new_blocks` pops its head and
drops the popped block's hash, `_maybe_evict_cached_block`); a freed hashed block joins the
tail in the order `KVCacheManager.free` hands it over (groups in order, each table reversed,
`SingleTypeKVCacheManager.free`). A rule here only changes that order, never which blocks
are cached, so every hit it allows is one vLLM's cache could serve.

* `LruEviction` — vLLM's order.
* `OrphansFirst` — the request's KV blocks beyond the deepest state its prompt has cached
  go to the queue head (evicted before any older cached block): a later request that
  reaches them cannot skip them (the hit is cut back to the state,
  `HybridKVCacheCoordinator.find_longest_cache_hit`) and recomputes them anyway; all they
  still give is the junction signal (`kvledger.blocks.admission`). Without Mamba groups
  every KV block is usable and the rule is vLLM's.

>>> OrphansFirst().evict_first(cached_blocks=10, state_blocks=6), \\
...     LruEviction().evict_first(cached_blocks=10, state_blocks=6)
(range(6, 10), range(0, 0))
"""

from __future__ import annotations


class LruEviction:
    name = "lru"
    needs_state_depth = False

    def evict_first(self, *, cached_blocks: int, state_blocks: int) -> range:
        """Attention positions released to the queue head, before the usual free: none."""
        return range(0)


class OrphansFirst(LruEviction):
    name = "orphans-first"
    needs_state_depth = True

    def evict_first(self, *, cached_blocks: int, state_blocks: int) -> range:
        """``cached_blocks``: the request's hashed attention positions; ``state_blocks``: the
        deepest prefix (in blocks) every Mamba group holds a state for."""
        return range(min(state_blocks, cached_blocks), cached_blocks)
