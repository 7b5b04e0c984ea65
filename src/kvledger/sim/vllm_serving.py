"""A serving run through vLLM's prefix cache (`kvledger.blocks`): the loop behind
`simulate --engine vllm` (`kvledger.sim.vllm_setup` builds its config from vLLM's plan).

A discrete-event loop over engine steps of vLLM's v1 `Scheduler.schedule`
(`vllm/v1/core/sched/scheduler.py`), the sync scheduler or, with ``steps_in_flight=2``,
`AsyncScheduler`'s step-ahead as the block cache sees it:

1. running requests first, in order: each gets its next prefill chunk or one decode token
   within the step's token budget (``max_num_batched_tokens``); a hybrid prefill chunk ends
   where `aligned_chunk_end` stops it and, when the budget cuts it, on a block multiple
   (`_mamba_block_aligned_split`). A request whose blocks do not fit preempts the last
   running request (recompute: its blocks are freed and it waits again at the head of the
   queue, `Scheduler._preempt_request`), and retries;
2. then, if nothing was preempted, waiting requests that have arrived, first come first
   served, while the budget and ``max_num_seqs`` last: prefix hit capped at ``L − 1``
   (`get_computed_blocks`), chunk, `allocate_slots`; the first that does not fit waits;
3. the step takes `StepCost.step_ms` of its work; then every request's computed tokens
   advance, full prompt blocks are cached (`cache_blocks`), a request that finished its
   prompt samples a token (its first token ends its TTFT), and one with all its output
   tokens is freed (`KVCacheManager.free`).

Assumptions and what is not modelled yet: only prompt blocks are cached (output tokens of a
Mooncake trace are unique, so cached output blocks would change only the LRU order, not a
later hit). Async step-ahead (`EngineCore.step_with_batch_queue`, two steps in flight) is
modelled where it changes the cache: a request scheduled in the previous step still has those
tokens in flight, so `remove_skipped_blocks` frees only what the step before passed (as
`replay --scheduler async`); its CPU overlap, and finished requests freed one step later, are
not. Blocks are cached when a step completes, not when `allocate_slots` schedules them. No
speculative decoding, no KV connector. With requests spaced so that each finishes before the
next arrives, an unbounded budget and one output token, the run is the sequential replay with
the same scheduler, request for request (tests/sim/test_vllm_serving.py and
tests/sim/test_vllm_sim.py check both).

>>> from kvledger.blocks import FullAttentionSpec, MambaAlignSpec
>>> from kvledger.sim.workload import Request
>>> reqs = [Request(rid=i, arrival_ms=1000.0 * i, segment_ids=(1, 2 + i),
...                 segment_tokens=(512, 300), output_tokens=3) for i in range(3)]
>>> cfg = VllmServeConfig(groups=(MambaAlignSpec(block_size_tokens=64),
...                               FullAttentionSpec(block_size_tokens=64)), num_blocks=256)
>>> out = vllm_serve(reqs, cfg)
>>> [r.hit_tokens for r in out.records], [r.steps for r in out.records]  # 1 prefill + 2 decodes
([0, 0, 512], [3, 4, 3])
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, replace

from kvledger.blocks import BlockHashChain, CacheHit, Coordinator, GroupSpec, aligned_chunk_end
from kvledger.blocks.policy import VLLM_POLICY, BlockPolicy
from kvledger.blocks.pool import PoolError
from kvledger.blocks.specs import MambaAlignSpec
from kvledger.sim.pages import PageKeyer
from kvledger.sim.timing import Roofline, StepCost, StepWork
from kvledger.sim.workload import Request


@dataclass(frozen=True, slots=True, kw_only=True)
class VllmServeConfig:
    groups: tuple[GroupSpec, ...]  # the KV-cache groups, in vLLM's group order
    num_blocks: int  # the one pool (block 0 is the null block)
    max_num_batched_tokens: int = 8192  # vLLM's token budget per step
    max_num_seqs: int = 256  # running requests at most
    step_cost: StepCost | Roofline = StepCost()  # prices a step (`StepWork`)
    # 1: the sync Scheduler; 2: AsyncScheduler's batch queue (VllmConfig's default), whose
    # next step is scheduled before the last one's output is processed
    steps_in_flight: int = 1
    policy: BlockPolicy = VLLM_POLICY  # state admission and eviction; vLLM's by default

    def __post_init__(self) -> None:
        for flag, value in (("--max-num-batched-tokens", self.max_num_batched_tokens),
                            ("--max-num-seqs", self.max_num_seqs)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{flag} {value!r}: expected a positive integer")
        self.step_cost.validate()
        if self.steps_in_flight not in (1, 2):
            raise ValueError(f"--scheduler: {self.steps_in_flight!r} steps in flight; expected "
                             "1 (sync) or 2 (async)")


@dataclass(frozen=True, slots=True)
class ServeRecord:
    rid: int
    arrival_ms: float
    first_token_ms: float
    finish_ms: float
    hit_tokens: int  # the hit of the admission that completed (after any preemption)
    steps: int  # steps the request was scheduled in
    preemptions: int
    admitted_ms: float = 0.0  # start of the step of the admission that completed
    prompt_tokens: int = 0
    output_tokens: int = 0  # sampled (at least one)
    attention_hit_tokens: int = 0  # the attention group's cached KV (≥ hit_tokens)


@dataclass(frozen=True, slots=True)
class VllmServeResult:
    records: tuple[ServeRecord, ...]  # finished requests, in finishing order
    unfinished: tuple[int, ...]  # requests that can never fit the pool
    num_steps: int
    preemptions: int
    evicted_blocks: tuple[int, ...]  # per group
    duration_ms: float = 0.0  # the clock when the last request finished
    prefill_tokens: int = 0  # prompt tokens computed, recomputation after preemption included


class _Live:
    """A request's scheduling state (vLLM's `Request` fields the scheduler reads)."""

    def __init__(self, request: Request, hashes: list[int]) -> None:
        self.request, self.hashes = request, hashes
        self.prompt_tokens = request.prompt_tokens
        self.total_tokens = request.prompt_tokens + max(1, request.output_tokens)
        self.computed = 0  # tokens whose KV is computed
        self.last_start = 0  # `computed` when its last step was scheduled
        self.last_step = 0  # the number of that step
        self.generated = 0
        self.hit: CacheHit | None = None
        self.boundaries: frozenset[int] = frozenset()
        self.junction = 0
        self.first_token_ms = self.admitted_ms = -1.0
        self.steps = self.preemptions = 0

    def reset(self) -> None:
        self.computed, self.last_start, self.generated, self.hit = 0, 0, 0, None


class _Loop:
    def __init__(self, requests: Sequence[Request], config: VllmServeConfig) -> None:
        self.config = config
        self.coord = Coordinator(config.groups, num_blocks=config.num_blocks,
                                 policy=config.policy)
        self.hybrid = any(isinstance(g, MambaAlignSpec) for g in config.groups)
        self.stop_at_replay = any(isinstance(g, MambaAlignSpec)
                                  and g.num_prefill_checkpoint_blocks == 0 for g in config.groups)
        self.block = self.coord.block_size_tokens
        keyer, chain = PageKeyer(self.block), BlockHashChain()
        order = sorted(requests, key=lambda r: (r.arrival_ms, r.rid))
        self.arrivals = deque(_Live(r, chain.hashes(keyer.keys(replace(r, output_tokens=0))
                                                    .tolist())) for r in order)
        self.waiting: deque[_Live] = deque()
        self.running: list[_Live] = []
        self.records: list[ServeRecord] = []
        self.unfinished: list[int] = []
        self.now_ms, self.num_steps, self.preemptions = 0.0, 0, 0
        self.prefill_tokens = 0

    def _chunk_end(self, live: _Live, budget: int) -> int:
        start = live.computed
        if start >= live.prompt_tokens:
            return start + 1  # decode: the token sampled last step
        end = min(live.prompt_tokens, start + budget)
        if self.hybrid:
            end = min(end, aligned_chunk_end(start, live.prompt_tokens,
                                             block_size_tokens=self.block,
                                             junction_tokens=live.junction,
                                             stop_at_replay=self.stop_at_replay))
            if end < live.prompt_tokens:
                end = end // self.block * self.block
        return end

    def _settled(self, live: _Live) -> int:
        """The computed tokens `remove_skipped_blocks` sees (`KVCacheManager.allocate_slots`:
        computed − in flight): with the async batch queue the previous step is still in
        flight when this one is scheduled, so its tokens do not count yet."""
        in_flight = self.config.steps_in_flight > 1 and live.last_step == self.num_steps
        return live.last_start if in_flight else live.computed

    def _preempt(self, victim: _Live) -> None:
        self.running.remove(victim)
        self.coord.free(victim.request.rid)
        victim.reset()
        victim.preemptions += 1
        self.preemptions += 1
        self.waiting.appendleft(victim)

    def _schedule(self) -> dict[int, tuple[_Live, int, int]]:
        """rid → (request, start, end) of the tokens scheduled this step."""
        budget, scheduled, preempted = self.config.max_num_batched_tokens, {}, False
        for live in list(self.running):
            if live not in self.running or budget <= 0:
                continue
            end = self._chunk_end(live, budget)
            if end <= live.computed:
                continue
            while True:
                try:
                    self.coord.remove_skipped_blocks(live.request.rid, self._settled(live))
                    self.coord.allocate_slots(live.request.rid, None, end_tokens=end,
                                              boundaries=live.boundaries)
                    break
                except PoolError:
                    victim = self.running[-1]
                    preempted = True
                    taken = scheduled.pop(victim.request.rid, None)
                    if taken is not None:  # its tokens go back to the budget
                        budget += taken[2] - taken[1]
                    self._preempt(victim)
                    if victim is live:
                        break
            if live in self.running:
                scheduled[live.request.rid] = (live, live.computed, end)
                budget -= end - live.computed
        while (not preempted and self.waiting and budget > 0
               and len(self.running) < self.config.max_num_seqs):
            live = self.waiting[0]
            hit = self.coord.find_longest_cache_hit(live.hashes, live.prompt_tokens)
            live.computed = hit.hit_tokens
            states = self.coord.state_boundaries(live.hashes, live.prompt_tokens, hit)
            live.junction, live.boundaries = states.junction_tokens, states.tokens
            end = self._chunk_end(live, budget)
            if end <= live.computed:
                break
            try:
                self.coord.allocate_slots(live.request.rid, hit, end_tokens=end,
                                          boundaries=live.boundaries)
            except PoolError:
                if not self.running:  # nothing will ever free: it cannot fit
                    self.unfinished.append(self.waiting.popleft().request.rid)
                    continue
                break
            live.hit, live.admitted_ms = hit, self.now_ms
            self.waiting.popleft()
            self.running.append(live)
            scheduled[live.request.rid] = (live, live.computed, end)
            budget -= end - live.computed
        return scheduled

    def _finish_step(self, scheduled: dict[int, tuple[_Live, int, int]]) -> None:
        for live, start, end in scheduled.values():
            live.last_start, live.computed, live.steps = start, end, live.steps + 1
            live.last_step = self.num_steps
            rid = live.request.rid
            if start < live.prompt_tokens:
                self.coord.cache_blocks(rid, live.hashes, min(end, live.prompt_tokens),
                                        live.boundaries)
            if end < live.prompt_tokens:
                continue  # a partial prefill samples nothing
            live.generated += 1
            if live.generated == 1:
                live.first_token_ms = self.now_ms
            if live.prompt_tokens + live.generated >= live.total_tokens:
                self.running.remove(live)
                self.coord.free(rid)
                self.records.append(ServeRecord(
                    rid=rid, arrival_ms=live.request.arrival_ms,
                    first_token_ms=live.first_token_ms, finish_ms=self.now_ms,
                    hit_tokens=live.hit.hit_tokens, steps=live.steps,
                    preemptions=live.preemptions, admitted_ms=live.admitted_ms,
                    prompt_tokens=live.prompt_tokens, output_tokens=live.generated,
                    attention_hit_tokens=live.hit.attention_hit_tokens))

    def run(self) -> VllmServeResult:
        while self.arrivals or self.waiting or self.running:
            while self.arrivals and self.arrivals[0].request.arrival_ms <= self.now_ms:
                self.waiting.append(self.arrivals.popleft())
            if not self.waiting and not self.running:
                self.now_ms = self.arrivals[0].request.arrival_ms
                continue
            scheduled = self._schedule()
            if not scheduled:
                if self.arrivals and not self.running:
                    self.now_ms = max(self.now_ms, self.arrivals[0].request.arrival_ms)
                continue
            work = StepWork(
                prefill_spans=tuple((s, e) for live, s, e in scheduled.values()
                                    if s < live.prompt_tokens),
                decode_contexts=tuple(e for live, s, e in scheduled.values()
                                      if s >= live.prompt_tokens))
            self.prefill_tokens += work.prefill_tokens
            self.now_ms += self.config.step_cost.step_ms(work)
            self.num_steps += 1
            self._finish_step(scheduled)
        return VllmServeResult(records=tuple(self.records), unfinished=tuple(self.unfinished),
                               num_steps=self.num_steps, preemptions=self.preemptions,
                               evicted_blocks=tuple(self.coord.pool.evicted_blocks),
                               duration_ms=self.now_ms, prefill_tokens=self.prefill_tokens)


def vllm_serve(requests: Sequence[Request], config: VllmServeConfig) -> VllmServeResult:
    """Serve ``requests`` (arrival times in ms) through vLLM's cache; every request either
    finishes or is reported unfinished (its prompt cannot fit the empty pool)."""
    return _Loop(requests, config).run()
