"""`simulate`: replay a workload against the real prefix tree under a capacity plan.

Discrete-event clock over engine steps. Each step: arrivals up to now join the queue; the
chunked request (if any) continues, then queued requests are admitted first come, first
served while the prefill budget lasts — the head waits (and every following request with it)
when a ledger is short: token pages T, state slots K or running requests N; every running
request past its prefill decodes one token. A run of decode-only steps in which nothing can
change (no arrival could be admitted, no request finishes) is taken in one stride.

Pools are sized from the plan, per rank: T / page token pages, K state slots, N requests.
With attention DP, rank 0's round-robin share of the workload is replayed. With
--enable-hierarchical-cache, device eviction, backups and loadbacks go through the host tier
(`kvledger.sim.host_tier`: SGLang's HiCache policies in accounting mode).

Every request either finishes or is reported unfinished with the reason (it can never fit).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from math import lcm

import numpy as np

from kvledger.cache.policies import StateEviction, StatePolicies, build_policies
from kvledger.deploy import MambaStrategy
from kvledger.gpus import get_gpu
from kvledger.hicache import HostRules
from kvledger.model.compute import compute_profile
from kvledger.plan import Plan
from kvledger.sim.config import DEFAULT_TIME_GPU, SimConfig
from kvledger.sim.device_cache import DeviceCache
from kvledger.sim.host_port import HostTierFactory, NoHostTier
from kvledger.sim.latency import LatencyStats
from kvledger.sim.lifecycle import CheckpointMode, Lifecycle
from kvledger.sim.metrics import Counters, RequestRecord, SimSummary, Unfinished
from kvledger.sim.pages import PageKeyer
from kvledger.sim.running import Running, kv_total_tokens
from kvledger.sim.series import Constraint, TimeSeries, blocked_mask
from kvledger.sim.timing import Roofline, StepCost, StepWork
from kvledger.sim.workload import Workload, WorkloadError

Progress = Callable[[int, int], None]  # (requests done, requests total)


@dataclass(frozen=True, slots=True, kw_only=True)
class SimResult:
    summary: SimSummary
    series: TimeSeries
    requests: tuple[RequestRecord, ...]  # finished requests, in finishing order


def _check_plan(plan: Plan, config: SimConfig) -> list[str]:
    lay = plan.layout
    if not lay.model.is_hybrid:
        raise WorkloadError(f"simulate: {lay.model.name} has no linear-attention layers; the "
                            "simulator replays the hybrid (FULL + MAMBA) prefix cache")
    if lay.deployment.disable_radix_cache:
        raise WorkloadError("simulate: --disable-radix-cache leaves nothing to simulate")
    config.validate(lay.page_tokens)
    grid = lcm(config.mamba_chunk_tokens, lay.page_tokens)
    if config.mamba_track_interval_tokens % grid:
        raise WorkloadError(f"--mamba-track-interval {config.mamba_track_interval_tokens}: must "
                            f"be a multiple of the checkpoint grid ({grid} tokens)")
    notes = []
    rules = HostRules.from_rules(lay.rules)
    if lay.deployment.enable_hierarchical_cache and not (rules.row_matches_device
                                                         and rules.indexer_pool):
        notes.append(f"rules {rules.name}: that release's host tier (host rows narrower than "
                     "device rows, no index-key copy) corrupts loadbacks and cannot be built; "
                     "the replay's host tier copies device rows and index keys byte for byte")
    if lay.deployment.attn_dp_size > 1:
        notes.append(f"attention DP {lay.deployment.attn_dp_size}: rank 0's round-robin share "
                     "of the requests is replayed against one rank's pools")
    return notes


def step_timer(plan: Plan, config: SimConfig) -> tuple[StepCost | Roofline, str]:
    """The step-time model and a line saying which: the linear constants when set, else the
    roofline on `time_gpu`, the plan's GPU or DEFAULT_TIME_GPU."""
    if config.step_cost is not None:
        c = config.step_cost
        return c, (f"linear: {c.overhead_ms:g} ms per step + {c.prefill_ms_per_token:g} ms per "
                   f"prefill token + {c.decode_ms_per_token:g} ms per decoded token")
    gpu = get_gpu(config.time_gpu) if config.time_gpu else plan.gpu or get_gpu(DEFAULT_TIME_GPU)
    timer = Roofline.for_plan(plan, gpu, config.efficiency)
    e = timer.efficiency
    return timer, (f"roofline on {gpu.name}: {e.flops:.0%} of peak FLOP/s, {e.hbm:.0%} of HBM "
                   f"bandwidth, {e.link:.0%} of the host link, {e.overhead_ms:g} ms per step")


def policies_for(plan: Plan, config: SimConfig) -> StatePolicies:
    """The configured state policies for one rank of `plan`; FLOP-aware eviction prices a
    state by the prefill FLOPs of its prefix (`ComputeProfile.prefill_flops`)."""
    cap, page = plan.capacity, plan.layout.page_tokens
    flops_of = _no_flops
    if config.state_eviction is StateEviction.FLOP_AWARE:
        profile = compute_profile(plan.layout.model)

        def flops_of(pages: int) -> float:
            return profile.prefill_flops(pages * page)
    return build_policies(config.state_admission, config.state_eviction, flops_of=flops_of,
                          slot_bytes=cap.slot_bytes, page_bytes=cap.token_bytes * page,
                          num_slots=cap.state_slots)


def _no_flops(pages: int) -> float:
    raise AssertionError("only FLOP-aware eviction prices states")


class Replay:
    def __init__(self, plan: Plan, workload: Workload, config: SimConfig, host: HostTierFactory,
                 progress: Sequence[Progress]) -> None:
        self.notes = _check_plan(plan, config)
        lay, cap = plan.layout, plan.capacity
        self.plan, self.config, self.progress = plan, config, progress
        attn_dp = lay.deployment.attn_dp_size
        self.workload = workload.share(0, attn_dp) if attn_dp > 1 else workload
        self.page = lay.page_tokens
        grid = lcm(config.mamba_chunk_tokens, self.page)
        self.cache = DeviceCache(num_pages=cap.max_total_tokens // self.page,
                                 num_slots=cap.state_slots, grid_pages=grid // self.page, host=host)
        self.host = self.cache.host
        self.counters = Counters()
        mode = (CheckpointMode.TRACKED if lay.deployment.mamba_strategy is MambaStrategy.EXTRA_BUFFER
                else CheckpointMode.EXACT)
        self.policies = policies_for(plan, config)
        self.life = Lifecycle(cache=self.cache, counters=self.counters, page_tokens=self.page,
                              grid_tokens=grid, track_interval_tokens=config.mamba_track_interval_tokens,
                              held_slots=lay.held_slots_per_request, mode=mode,
                              page_bytes=cap.token_bytes * self.page, slot_bytes=cap.slot_bytes,
                              policies=self.policies)
        self.max_running = cap.max_running_requests
        self.keyer = PageKeyer(self.page)
        self.series = TimeSeries()
        self.unfinished: list[Unfinished] = []
        self.records: list[RequestRecord] = []
        self.pending = deque(self.workload.requests)
        self.waiting: deque[Running] = deque()
        self.decoding: list[Running] = []  # past prefill, generating
        self.chunked: Running | None = None  # the one request whose prefill is cut in chunks
        self.num_running = 0  # admitted, not finished: chunked + decoding
        self.now_ms = 0.0
        self.spans: list[tuple[int, int]] = []  # prefill chunks of the current step
        self.timed_transfer_bytes = 0
        self.timer, self.timing = step_timer(plan, config)

    # ---- one step --------------------------------------------------------------------------

    def _arrive(self) -> None:
        while self.pending and self.pending[0].arrival_ms <= self.now_ms:
            request = self.pending.popleft()
            self.counters.arrived += 1
            if reason := self.life.never_fits(kv_total_tokens(request.prompt_tokens,
                                                              request.output_tokens)):
                self.unfinished.append(Unfinished(rid=request.rid, reason=reason))
                continue
            self.waiting.append(Running(request=request, seq_keys=self.keyer.keys(request)))

    def _prefill(self) -> tuple[int, set[Constraint], list[Running]]:
        budget = self.config.chunked_prefill_tokens
        computed, started = 0, []
        spans = self.spans = []
        if self.chunked is not None:
            first = self.chunked.computed_tokens
            done = self.life.prefill(self.chunked, budget)
            if done:
                spans.append((first, first + done))
            budget, computed = budget - done, computed + done
            if not self.chunked.in_prefill:
                started.append(self.chunked)
                self.chunked = None
        blocked: set[Constraint] = set()
        while self.waiting and budget > 0 and self.chunked is None:
            head = self.waiting[0]
            blocked = self.life.try_admit(head, running_full=self.num_running >= self.max_running)
            if blocked:
                break
            self.waiting.popleft()
            self.num_running += 1
            head.admitted_ms = self.now_ms
            self.counters.queue_ms += self.now_ms - head.request.arrival_ms
            first = head.computed_tokens
            done = self.life.prefill(head, budget)
            if done:
                spans.append((first, first + done))
            budget, computed = budget - done, computed + done
            if head.in_prefill:
                self.chunked = head
            else:
                started.append(head)
        if self.waiting and not blocked:
            blocked = {Constraint.PREFILL_BUDGET}
        return computed, blocked, started

    def _stride(self, blocked: set[Constraint], step_ms: float) -> int:
        """Decode-only steps that can be taken at once: up to the first finish, and up to
        the next arrival unless the queue is blocked on a ledger anyway."""
        steps = min(r.output_tokens - r.generated_tokens for r in self.decoding)
        if self.pending and not (blocked and self.waiting):
            gap = self.pending[0].arrival_ms - self.now_ms
            steps = min(steps, max(1, int(np.ceil(gap / step_ms))))
        return max(steps, 1)

    def step(self) -> None:
        computed, blocked, started = self._prefill()
        decoding = self.decoding
        contexts = tuple(r.computed_tokens + r.generated_tokens for r in decoding)
        transfer = self.counters.loadback_bytes - self.timed_transfer_bytes
        self.timed_transfer_bytes = self.counters.loadback_bytes
        step_ms = self.timer.step_ms(StepWork(prefill_spans=tuple(self.spans),
                                              decode_contexts=contexts, transfer_bytes=transfer))
        steps = 1
        if not computed and decoding and self.chunked is None:
            steps = self._stride(blocked, step_ms)
            if steps > 1:  # price the stride at its middle step (contexts grow by one a step)
                mid = (steps - 1) // 2
                step_ms = self.timer.step_ms(StepWork(
                    decode_contexts=tuple(c + mid for c in contexts)))
        elif not computed and not decoding:
            raise RuntimeError(f"simulation stalled at {self.now_ms:.1f} ms: nothing runs, "
                               f"{len(self.waiting)} waiting, blocked on {blocked}")
        decode = self.life.decode
        for run in decoding:
            decode(run, steps)
        decoded = len(decoding) * steps
        self.counters.decode_tokens += decoded
        done = [r for r in decoding if r.generated_tokens >= r.output_tokens]
        done += [r for r in started if r.generated_tokens >= r.output_tokens]
        for run in done:
            self.life.finish(run)
        if done:
            finished = {id(r) for r in done}
            self.num_running -= len(done)
            decoding = [r for r in decoding if id(r) not in finished]
        decoding += [r for r in started if r.generated_tokens < r.output_tokens]
        self.decoding = decoding
        elapsed = steps * step_ms
        for run in started:  # sampled by this step's pass, out when it ends
            run.first_token_ms = self.now_ms + step_ms
        self.now_ms += elapsed
        for run in done:
            self.records.append(RequestRecord(
                rid=run.request.rid, arrival_ms=run.request.arrival_ms,
                admitted_ms=run.admitted_ms, first_token_ms=run.first_token_ms,
                finished_ms=self.now_ms, prompt_tokens=run.prompt_tokens,
                output_tokens=run.output_tokens, hit_tokens=run.hit_tokens,
                usable_hit_tokens=run.usable_hit_tokens))
        c = self.counters
        c.steps += steps
        for constraint in blocked:
            c.blocked_ms[constraint] += elapsed
        self._record(steps, computed, decoded, blocked)

    def _record(self, steps: int, computed: int, decoded: int, blocked: set[Constraint]) -> None:
        cache, tree, c, life = self.cache, self.cache.tree.sizes(), self.counters, self.life
        own, held_slots = life.own_pages, life.held_slots_total
        free_pages, free_slots = cache.pages.num_free, cache.slots.num_free
        cache_slots = tree.mamba_evictable_slots + tree.mamba_protected_slots
        c.peak_pages_used = max(c.peak_pages_used, cache.pages.capacity - free_pages)
        c.peak_pages_pinned = max(c.peak_pages_pinned, own + tree.full_protected_tokens)
        c.peak_slots_used = max(c.peak_slots_used, cache.slots.capacity - free_slots)
        c.peak_slots_pinned = max(c.peak_slots_pinned, held_slots + tree.mamba_protected_slots)
        c.peak_running = max(c.peak_running, self.num_running)
        host = self.host.usage()
        self.series.append((
            self.now_ms, steps, self.num_running, len(self.waiting), computed, decoded, own,
            tree.full_protected_tokens, tree.full_evictable_tokens, free_pages,
            life.reserved_pages, held_slots, cache_slots, free_slots, c.prompt_tokens,
            c.hit_tokens, c.usable_hit_tokens, blocked_mask(blocked), *host,
        ))

    # ---- the whole run ---------------------------------------------------------------------

    def check_integrity(self) -> None:
        running = self.decoding + ([self.chunked] if self.chunked else [])
        if len(running) != self.num_running:
            raise RuntimeError(f"{self.num_running} requests admitted and unfinished, "
                               f"{len(running)} tracked")
        own = [r.take_own() for r in running]
        held_pages = np.concatenate(own) if own else np.zeros(0, dtype=np.int64)
        held_slots = np.array([s for r in running for s in r.slots], dtype=np.int64)
        self.cache.check_integrity(held_pages=held_pages, held_slots=held_slots)
        if len(held_pages) != self.life.own_pages or len(held_slots) != self.life.held_slots_total:
            raise RuntimeError("own-page or held-slot totals drifted from the requests'")
        reserved = sum(r.reserved_pages for r in running)
        if reserved != self.life.reserved_pages:
            raise RuntimeError(f"reserved pages drifted: requests {reserved}, "
                               f"ledger {self.life.reserved_pages}")
        if self.cache.available_pages < self.life.reserved_pages:
            raise RuntimeError("more pages promised than free and evictable")

    def run(self) -> SimResult:
        start = time.perf_counter()
        total = len(self.workload.requests)
        every = self.config.integrity_every_steps
        report_at = 0
        while True:
            self._arrive()
            if not self.waiting and not self.num_running:
                if not self.pending:
                    break
                self.now_ms = max(self.now_ms, self.pending[0].arrival_ms)
                continue
            self.step()
            if every and len(self.series) % every == 0:
                self.check_integrity()
            done = self.counters.finished + len(self.unfinished)
            if done >= report_at:
                for observer in self.progress:
                    observer(done, total)
                report_at = done + max(total // 200, 1)
        self.check_integrity()
        for observer in self.progress:
            observer(total, total)
        return SimResult(summary=self._summary(time.perf_counter() - start), series=self.series,
                         requests=tuple(self.records))

    def _summary(self, wall_s: float) -> SimSummary:
        cap = self.plan.capacity
        stats = self.host.stats()
        host_note = ("not available: no host tier in this run (--enable-hierarchical-cache "
                     "is off)" if stats is None else
                     f"{stats.policy}: host pools of {stats.capacity_pages:,} pages and "
                     f"{stats.capacity_slots:,} state slots, replayed in accounting mode "
                     "(indices only, no bytes moved)")
        return SimSummary(
            workload=self.workload.name, num_requests=len(self.workload.requests),
            page_tokens=self.page, token_pages=self.cache.pages.capacity,
            state_slots=self.cache.slots.capacity, max_running_requests=self.max_running,
            token_bytes=cap.token_bytes, slot_bytes=cap.slot_bytes, counters=self.counters,
            unfinished=tuple(self.unfinished), evicted_pages=self.cache.evicted_pages,
            evicted_slots=self.cache.evicted_slots, host=stats, host_note=host_note,
            duration_ms=self.now_ms, wall_s=wall_s, timing=self.timing,
            policies=self.policies.label,
            latency=LatencyStats.of(self.records, duration_ms=self.now_ms) if self.records
            else None, notes=tuple(self.notes),
        )


def host_tier_for(plan: Plan, config: SimConfig) -> HostTierFactory:
    """The host tier the plan's deployment asks for: HiCache (loaded only then: it needs
    torch) with the configured write policy, or none."""
    if not plan.layout.deployment.enable_hierarchical_cache:
        return NoHostTier
    from kvledger.sim.host_tier import HiCacheTier

    return HiCacheTier.factory(plan, config.hicache_write_policy)


def simulate(plan: Plan, workload: Workload, config: SimConfig | None = None, *,
             host: HostTierFactory | None = None,
             progress: Sequence[Progress] = ()) -> SimResult:
    """Replay `workload` on one rank of `plan`; see the module docstring. `host` overrides
    the host tier the plan asks for (`host_tier_for`)."""
    config = config or SimConfig()
    replay = Replay(plan, workload, config, host or host_tier_for(plan, config), progress)
    return replay.run()
