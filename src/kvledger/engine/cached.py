"""PrefixCache: the engine's ``RequestCache`` served by the full memory system.

A thin adapter: ``kvledger.cache.HybridCache`` in real-bytes mode (``TokenRows``) does
matching, loadback, locking, eviction and inserts on token ids and slots — the same facade
code the simulator runs in accounting mode; this turns its answers into the model's
``SeqChunk`` and keeps the request ↔ holdings map. Prefill forwards of a request that goes
on running are cached after every chunk (SGLang's ``cache_unfinished_req``), finished
requests when they end (``cache_finished_req``).
"""

from __future__ import annotations

import torch

from kvledger.cache import CacheSeq, CheckpointMode, HybridCache, Shortfall
from kvledger.cache.hicache_tier import HiCacheTier
from kvledger.cache.policies import StatePolicies
from kvledger.cache.token_rows import TokenRows
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
from kvledger.sglang.deploy import Deployment, MambaStrategy
from kvledger.sglang.mamba_strategy import state_slots_per_request
from kvledger.tree import RadixTree

# The tiny engine runs SGLang's default hybrid deployment: extra_buffer with the overlap
# scheduler, so each running request holds a working slot and two ping-pong track slots.
ENGINE_DEPLOYMENT = Deployment(mamba_strategy=MambaStrategy.EXTRA_BUFFER)


class PrefixCache:
    def __init__(self, cache: HybridCache) -> None:
        if not isinstance(cache.rows, TokenRows):
            raise ValueError("PrefixCache: the engine needs the facade in real-bytes mode")
        self.cache = cache
        self.rows: TokenRows = cache.rows
        self.store = PoolStore(cache.rows.kv)
        self._seqs: dict[int, CacheSeq] = {}

    def announce(self, req: Request) -> None:
        """`req` is waiting: policies that read the queue see its prompt."""
        self.cache.announce(req.prompt, prompt_tokens=len(req.prompt))

    def admit(self, req: Request) -> bool:
        seq = self.cache.admit(req.prompt, prompt_tokens=len(req.prompt),
                               final_tokens=req.final_tokens)
        if isinstance(seq, Shortfall):
            return False
        self._seqs[req.rid] = seq
        req.computed_tokens = seq.computed_tokens
        return True

    def prepare(self, req: Request, num_new_tokens: int) -> SeqChunk:
        seq = self._seqs[req.rid]
        ext = self.cache.extend(seq, num_new_tokens)
        start = seq.computed_tokens
        return SeqChunk(input_ids=torch.from_numpy(req.tokens[start:start + num_new_tokens]),
                        start_tokens=start, token_locs=self.rows.token_locs(seq),
                        state_slot=seq.slots[0], tail_row=seq.row,
                        checkpoints=ext.checkpoints)

    def after_forward(self, req: Request, chunk: SeqChunk) -> None:
        # SGLang caches every prefill forward of a request that goes on running
        # (scheduler_output_processor_mixin.process_batch_result_prefill → cache_unfinished_req);
        # one that finishes with it is cached at release (cache_finished_req).
        end, prompt = chunk.start_tokens + chunk.num_new_tokens, len(req.prompt)
        self.cache.commit(self._seqs[req.rid], req.tokens, chunk.num_new_tokens,
                          cache_unfinished=chunk.start_tokens < prompt
                          and (end < prompt or req.max_new_tokens > 1))

    def finish(self, req: Request) -> None:
        self.cache.release(self._seqs.pop(req.rid), req.tokens)

    def check_integrity(self) -> None:
        self.cache.check_integrity()


def real_bytes_cache(pools, tree: RadixTree, host: HostTier | None = None,
                     store=None, policies: StatePolicies | None = None) -> HybridCache:
    """The facade over the tiny model's pools (and host and store tiers, if asked for)."""
    tier = None if host is None else HiCacheTier(build_host_tier(pools, tree, host), unit_tokens=1)
    _, held = state_slots_per_request(ENGINE_DEPLOYMENT)
    return HybridCache(rows=TokenRows(pools.kv, pools.token_allocator), tree=tree,
                       states=pools.state_allocator, held_slots_per_request=held,
                       mode=CheckpointMode.TRACKED, host=tier, store=store,
                       policies=policies)


def prefix_cache(cfg: TinyConfig, sizes: PoolSizes, *, host: HostTier | None = None,
                 mamba_chunk_tokens: int | None = None,
                 store: StoreTierSpec | None = None,
                 policies: StatePolicies | None = None) -> PrefixCache:
    """Device pools, a radix tree, the host and store tiers if asked for, and the facade.

    ``mamba_chunk_tokens`` defaults to the page, so states can be saved at every page end
    (GLM-5.3-Flash's KDA chunk is 64 tokens; the tiny model's grid is a knob).
    """
    pools = build_device_pools(cfg, sizes)
    tree = RadixTree(page_size=sizes.page_tokens,
                     mamba_chunk_tokens=mamba_chunk_tokens or sizes.page_tokens)
    tier = None if store is None else build_store_tier(cfg, pools, store)
    return PrefixCache(real_bytes_cache(pools, tree, host, tier, policies))
