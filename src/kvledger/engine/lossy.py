"""Lossy what-if (never the default, never in `verify`'s bit-identical matrix): 8-bit states.

The cached run stores its prefix-cache checkpoints 8-bit: symmetric int8 with one scale per
row of the last dimension (absmax / 127), the layout `cache.policies.lossy_states` prices.
Every cached state reaches a request through one copy, the load into its working slot
(`HybridCache.admit`, `copy_state(cached, working)`), so quantizing there is quantizing on
save: a checkpoint is read only through that copy, and absmax quantization is idempotent.
Running requests keep full-precision states. The reference engine reports the largest
absolute logit difference against the cache-free run and how many requests' tokens changed.

>>> d = lossy_difference("branching")
>>> d.requests, d.cached_prompt_tokens > 0, d.max_logit_difference > 0
(6, True, True)
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from kvledger.cache import CheckpointMode, HybridCache
from kvledger.cache.token_rows import TokenRows
from kvledger.engine.cached import ENGINE_DEPLOYMENT, PrefixCache
from kvledger.engine.fresh import FreshCache
from kvledger.engine.loop import Engine
from kvledger.engine.memory import build_device_pools
from kvledger.engine.model import TinyModel
from kvledger.engine.script import run_script
from kvledger.engine.workloads import WORKLOADS
from kvledger.resolve import state_slots_per_request
from kvledger.tree import RadixTree

INT8_LEVELS = 127


def fake_int8(x: torch.Tensor) -> torch.Tensor:
    """x through int8 and back, one absmax scale per row of the last dimension."""
    wide = x.to(torch.float32)
    scale = wide.abs().amax(dim=-1, keepdim=True) / INT8_LEVELS
    safe = torch.where(scale > 0, scale, torch.ones_like(scale))
    q = torch.round(wide / safe).clamp(-INT8_LEVELS, INT8_LEVELS)
    return (q * safe).to(x.dtype)


class Int8CheckpointRows(TokenRows):
    """Token rows whose cached states are read back through 8-bit (the lossy what-if)."""

    def copy_state(self, src: int, dst: int) -> None:
        super().copy_state(src, dst)
        pool = self.kv.mamba_pool
        assert pool is not None
        for states in (pool.conv, pool.temporal):
            states[:, dst] = fake_int8(states[:, dst])


@dataclass(frozen=True, slots=True)
class LossyDifference:
    workload: str
    requests: int
    cached_prompt_tokens: int
    max_logit_difference: float  # largest |cached − cache-free| over every generated logit
    changed_requests: int  # requests whose generated tokens differ


def lossy_difference(name: str) -> LossyDifference:
    """Run workload `name` with 8-bit cached checkpoints and cache-free; compare logits."""
    if name not in WORKLOADS:
        raise ValueError(f"--workload {name!r}: expected one of {', '.join(WORKLOADS)}")
    workload = WORKLOADS[name]
    if workload.host is not None or workload.store is not None:
        raise ValueError(f"--workload {name}: the lossy what-if covers device states only")
    script = workload.script()
    longest = max(script.request_tokens(workload.max_new_tokens))
    sizes = replace(workload.sizes, max_context_tokens=max(longest, workload.sizes.max_context_tokens))
    pools = build_device_pools(workload.config, sizes)
    tree = RadixTree(page_size=sizes.page_tokens,
                     mamba_chunk_tokens=workload.mamba_chunk_tokens or sizes.page_tokens)
    _, held = state_slots_per_request(ENGINE_DEPLOYMENT)
    cache = PrefixCache(HybridCache(rows=Int8CheckpointRows(pools.kv, pools.token_allocator),
                                    tree=tree, states=pools.state_allocator,
                                    held_slots_per_request=held, mode=CheckpointMode.TRACKED))
    fresh = FreshCache(workload.config, max_running_requests=workload.max_running_requests,
                       max_context_tokens=longest, page_tokens=sizes.page_tokens)
    model = TinyModel(workload.config)
    runs = []
    for request_cache in (cache, fresh):
        engine = Engine(model, request_cache, chunk_tokens=workload.chunk_tokens,
                        max_running_requests=workload.max_running_requests)
        runs.append((run_script(engine, script, workload.max_new_tokens), engine.stats))
        request_cache.check_integrity()
    (lossy, stats), (exact, _) = runs
    diff = max(float((a.logits - b.logits).abs().max()) for a, b in zip(lossy, exact, strict=True))
    changed = sum(a.token_ids != b.token_ids for a, b in zip(lossy, exact, strict=True))
    return LossyDifference(workload=name, requests=stats.requests,
                           cached_prompt_tokens=stats.cached_prompt_tokens,
                           max_logit_difference=diff, changed_requests=changed)
