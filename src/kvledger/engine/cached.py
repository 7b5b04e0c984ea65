"""PrefixCache: the engine's ``RequestCache`` served by the full memory system.

A thin adapter: ``kvledger.cache.HybridCache`` does matching, loadback, locking, eviction and
inserts on token ids and slots; this turns its answers into the model's ``SeqChunk`` and
keeps the request ↔ holdings map. Unfinished requests are cached after every prefill chunk
(SGLang's ``cache_unfinished_req``), finished ones when they end (``cache_finished_req``).
"""

from __future__ import annotations

import torch

from kvledger.cache import CacheSeq, HybridCache
from kvledger.engine.batch import SeqChunk
from kvledger.engine.config import TinyConfig
from kvledger.engine.memory import (
    HostTier,
    PoolSizes,
    StoreTierSpec,
    build_device_pools,
    build_host_tier,
    build_store_tier,
)
from kvledger.engine.pool_store import PoolStore
from kvledger.engine.request import Request
from kvledger.tree import RadixTree


class PrefixCache:
    def __init__(self, cache: HybridCache) -> None:
        self.cache = cache
        self.store = PoolStore(cache.kv)
        self._seqs: dict[int, CacheSeq] = {}

    def admit(self, req: Request) -> bool:
        seq = self.cache.admit(req.prompt, req.final_tokens)
        if seq is None:
            return False
        self._seqs[req.rid] = seq
        req.computed_tokens = seq.computed_tokens
        return True

    def prepare(self, req: Request, num_new_tokens: int) -> SeqChunk:
        seq = self._seqs[req.rid]
        ext = self.cache.extend(seq, num_new_tokens)
        start = seq.computed_tokens
        return SeqChunk(input_ids=torch.from_numpy(req.tokens[start:start + num_new_tokens]),
                        start_tokens=start, token_locs=ext.token_locs,
                        state_slot=seq.state_slot, tail_row=seq.row,
                        checkpoints=ext.checkpoints)

    def after_forward(self, req: Request, chunk: SeqChunk) -> None:
        self.cache.commit(self._seqs[req.rid], req.tokens, chunk.num_new_tokens,
                          cache_unfinished=chunk.start_tokens < len(req.prompt))

    def finish(self, req: Request) -> None:
        self.cache.release(self._seqs.pop(req.rid), req.tokens)

    def check_integrity(self) -> None:
        self.cache.check_integrity()


def prefix_cache(cfg: TinyConfig, sizes: PoolSizes, *, host: HostTier | None = None,
                 mamba_chunk_tokens: int | None = None,
                 store: StoreTierSpec | None = None) -> PrefixCache:
    """Device pools, a radix tree, the host and store tiers if asked for, and the facade.

    ``mamba_chunk_tokens`` defaults to the page, so states can be saved at every page end
    (GLM-5.3-Flash's KDA chunk is 64 tokens; the tiny model's grid is a knob).
    """
    pools = build_device_pools(cfg, sizes)
    tree = RadixTree(page_size=sizes.page_tokens,
                     mamba_chunk_tokens=mamba_chunk_tokens or sizes.page_tokens)
    controller = None if host is None else build_host_tier(pools, tree, host)
    tier = None if store is None else build_store_tier(cfg, pools, store)
    return PrefixCache(HybridCache(kv=pools.kv, token_allocator=pools.token_allocator,
                                   state_allocator=pools.state_allocator, tree=tree,
                                   host=controller, store=tier))
