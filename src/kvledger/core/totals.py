"""DeploymentTotals: the whole deployment's numbers, in one shape for every engine.

SGLang fills them from its capacity plan (`kvledger.sglang.capacity.CapacityPlan.totals`),
vLLM from its block pool (`kvledger.vllm.plan.VllmPlan.totals`); sweeps, comparisons and
recommendations read only these.

>>> t = DeploymentTotals(ranks=8, workers=8, running_requests=384, tokens=12_460_288,
...                      token_pool_bytes=1, state_pool_bytes=2, verify_bytes=0, side_bytes=3)
>>> t.running_requests // t.workers
48
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class DeploymentTotals:
    """The whole deployment: every GPU holds one rank's pools; each worker (an attention-DP
    worker or replica for SGLang, a DP engine for vLLM) schedules its own requests over its
    own tokens (tensor-parallel ranks of one worker shard the same tokens, so they count
    once)."""

    ranks: int  # GPUs = tp_size (× dp_size when dp runs replicas, without DP attention)
    workers: int  # schedulers = attn_dp_size (or dp_size replicas; vLLM: DP engines)
    running_requests: int  # N × workers
    tokens: int  # T × workers
    token_pool_bytes: int  # per-rank pool × ranks
    state_pool_bytes: int
    verify_bytes: int
    side_bytes: int
