"""A vLLM replay's summary: the fields of `oracle/vllm-0.33-prefix-cache/summary.json` rows.

The digest is the SGLang replay's (`kvledger.sequential.summary.digest`): sha1 of the int32
little-endian hit array, so equal digests mean equal hits request by request.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kvledger.sequential.summary import digest
from kvledger.sequential.vllm_replay import VllmReplayOutput
from kvledger.sequential.vllm_spec import Scheduler


def _rate(part: int, whole: int) -> float:
    return round(part / whole, 6) if whole else 0.0


def vllm_summary(out: VllmReplayOutput) -> dict[str, Any]:
    """The oracle row's fields; Mamba-only fields are None for a FULL-only replay."""
    spec = out.spec
    state = spec.has_state
    prompt_tokens = int(out.prompt_tokens.sum())
    hit_tokens = int(out.hits.astype(np.int64).sum())
    fa_tokens = int(out.attention_hits.astype(np.int64).sum())
    fa_evicted, mamba_evicted = out.evicted_blocks
    return {
        "run": spec.run_name,
        "kind": "hybrid-align" if state else "full",
        "block_size": spec.block_tokens,
        "coordinator": "HybridKVCacheCoordinator" if state else "UnitaryKVCacheCoordinator",
        "prefix_cache_retention_interval": spec.retention_tokens if state else None,
        "num_prefill_checkpoint_blocks": spec.checkpoint_blocks if state else None,
        "async_scheduling": spec.scheduler is Scheduler.ASYNC,
        "pool_tokens": spec.pool_tokens,
        "num_blocks": spec.num_blocks,
        "requests": len(out.hits),
        "prompt_tokens": prompt_tokens,
        "hit_tokens": hit_tokens,
        "token_hit_rate": _rate(hit_tokens, prompt_tokens),
        "fa_hit_tokens": fa_tokens,
        "fa_token_hit_rate": _rate(fa_tokens, prompt_tokens),
        "requests_with_hit": int(np.count_nonzero(out.hits)),
        "evicted_blocks_fa": fa_evicted,
        "evicted_blocks_mamba": mamba_evicted,
        "evicted_tokens_fa": fa_evicted * spec.block_tokens,
        "multi_step_prefills": int(np.count_nonzero(out.steps > 1)),
        "max_steps": int(out.steps.max()) if len(out.steps) else 0,
        "checkpoint_steps": out.checkpoint_steps,
        "junction_requests": out.junction_requests,
        "final_cached_blocks": out.final_cached_blocks,
        "final_cached_mamba_states": out.final_cached_states,
        "final_free_uncached": out.final_free_uncached,
        "prefix_len_sha1": digest(out.hits),
    }
