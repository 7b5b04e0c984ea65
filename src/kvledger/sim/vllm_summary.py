"""What `simulate --engine vllm` reports: the serving run's hits, evictions and latency.

The metrics carry SGLang's names (`kvledger.sim.metrics`) so the two engines compare:

- token hit: the attention group's cached KV at admission (``F``, capped at ``L − 1``);
- usable hit: what the request skips, ``F`` cut back to the deepest cached state
  (`HybridKVCacheCoordinator.find_longest_cache_hit`); FULL-only models: the two are equal;
- evictions: blocks the pool evicted (`BlockPool._maybe_evict_cached_block`), KV blocks of the
  attention group and states (a state is one block in each Mamba group);
- TTFT, TPOT and throughput: `LatencyStats` over the finished requests, as SGLang's replay.

Hits count the admission that completed (after any recompute preemption).

>>> from kvledger.sim.vllm_serving import ServeRecord, VllmServeResult
>>> rec = ServeRecord(rid=0, arrival_ms=0.0, first_token_ms=20.0, finish_ms=40.0, hit_tokens=64,
...                   steps=3, preemptions=0, prompt_tokens=200, output_tokens=3,
...                   attention_hit_tokens=128)
>>> res = VllmServeResult(records=(rec,), unfinished=(), num_steps=3, preemptions=0,
...                       evicted_blocks=(2, 2, 5), duration_ms=40.0)
>>> s = vllm_summary(res, workload="w", num_requests=1, block_tokens=64, num_blocks=100,
...                  num_mamba_groups=2, max_num_seqs=8, max_num_batched_tokens=512,
...                  bytes_per_block=1024, timing="t", wall_s=0.0)
>>> s.token_hit_rate, s.usable_hit_rate, s.evicted_kv_tokens, s.evicted_states
(0.64, 0.32, 320, 2)
"""

from __future__ import annotations

from dataclasses import dataclass

from kvledger.sim.fleet.capacity import queue_grows
from kvledger.sim.latency import LatencyStats
from kvledger.sim.metrics import HitRates, RequestRecord
from kvledger.sim.vllm_serving import VllmServeResult


@dataclass(frozen=True, slots=True, kw_only=True)
class VllmSimSummary(HitRates):
    workload: str
    num_requests: int
    block_tokens: int
    num_blocks: int  # the one pool, null block included
    num_mamba_groups: int  # blocks one cached state costs
    max_num_seqs: int
    max_num_batched_tokens: int
    bytes_per_block: int
    finished: int
    unfinished: tuple[int, ...]  # rids whose prompt can never fit the pool
    prompt_tokens: int  # of finished requests
    hit_tokens: int
    usable_hit_tokens: int
    prefill_tokens: int  # computed, recomputation included
    decode_tokens: int
    evicted_kv_blocks: int
    evicted_states: int
    preemptions: int
    steps: int
    duration_ms: float
    wall_s: float
    timing: str
    latency: LatencyStats | None  # None: nothing finished
    notes: tuple[str, ...] = ()
    queue_grows: bool = False  # a backlog builds up (`capacity.queue_grows`): saturated


    @property
    def evicted_kv_tokens(self) -> int:
        return self.evicted_kv_blocks * self.block_tokens


def vllm_summary(result: VllmServeResult, *, workload: str, num_requests: int,
                 block_tokens: int, num_blocks: int, num_mamba_groups: int, max_num_seqs: int,
                 max_num_batched_tokens: int, bytes_per_block: int, timing: str, wall_s: float,
                 attention_group: int = -1, notes: tuple[str, ...] = ()) -> VllmSimSummary:
    """The summary of one run; ``attention_group``: the attention group's index in the run's
    groups (default the last), every other group a Mamba group."""
    records = [RequestRecord(rid=r.rid, arrival_ms=r.arrival_ms, admitted_ms=r.admitted_ms,
                             first_token_ms=r.first_token_ms, finished_ms=r.finish_ms,
                             prompt_tokens=r.prompt_tokens, output_tokens=r.output_tokens,
                             hit_tokens=r.attention_hit_tokens,
                             usable_hit_tokens=r.hit_tokens) for r in result.records]
    evicted = list(result.evicted_blocks)
    kv_blocks = evicted.pop(attention_group)
    state_blocks = sum(evicted)
    return VllmSimSummary(
        workload=workload, num_requests=num_requests, block_tokens=block_tokens,
        num_blocks=num_blocks, num_mamba_groups=num_mamba_groups, max_num_seqs=max_num_seqs,
        max_num_batched_tokens=max_num_batched_tokens, bytes_per_block=bytes_per_block,
        finished=len(records), unfinished=result.unfinished,
        prompt_tokens=sum(r.prompt_tokens for r in records),
        hit_tokens=sum(r.hit_tokens for r in records),
        usable_hit_tokens=sum(r.usable_hit_tokens for r in records),
        prefill_tokens=result.prefill_tokens,
        decode_tokens=sum(r.output_tokens for r in records),
        evicted_kv_blocks=kv_blocks,
        evicted_states=state_blocks // num_mamba_groups if num_mamba_groups else 0,
        preemptions=result.preemptions, steps=result.num_steps,
        duration_ms=result.duration_ms, wall_s=wall_s, timing=timing,
        latency=LatencyStats.of(records, duration_ms=result.duration_ms) if records else None,
        notes=notes, queue_grows=queue_grows(records))
