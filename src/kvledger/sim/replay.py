"""`simulate`: replay a workload against the real prefix tree under a capacity plan.

Discrete-event clock over engine steps. Each step: arrivals up to now join the queue; the
chunked request (if any) continues, then queued requests are admitted first come, first
served while the prefill budget lasts — the head waits (and every following request with it)
when a ledger is short: token pages T, state slots K or running requests N; every running
request past its prefill decodes one token. A run of decode-only steps in which nothing can
change (no arrival could be admitted, no request finishes) is taken in one stride.

Pools are sized from the plan, per rank: T / page token pages, K state slots, N requests.
With attention DP, rank 0's round-robin share of the workload is replayed. Every memory
decision — admission, page reservation, chunked-prefill inserts, decode checkpoints, finish,
release, eviction — is the cache facade's (`kvledger.cache.HybridCache` in accounting mode,
the same code the reference engine runs in real bytes). With --enable-hierarchical-cache,
device eviction, backups and loadbacks go through its host tier (SGLang's HiCache policies);
with --l3-size, writes and restores go through its store tier in accounting mode (the same
`kvledger.cache.l3_tier.L3Tier` that `kvledger verify --workload l3-*` runs in real bytes),
and the step that admits a request waits its store reads (`kvledger.sim.l3`).

Every request either finishes or is reported unfinished with the reason (it can never fit).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from kvledger.cache.accounting import accounting_cache
from kvledger.cache.seq import Shortfall
from kvledger.core.units import align_down
from kvledger.sglang.plan import SglangPlan
from kvledger.sim.config import SimConfig
from kvledger.sim.l3 import store_summary
from kvledger.sim.latency import LatencyStats
from kvledger.sim.metrics import Counters, RequestRecord, SimSummary, Unfinished
from kvledger.sim.pages import PageKeyer
from kvledger.sim.running import Running, kv_total_tokens
from kvledger.sim.series import Constraint, TimeSeries, blocked_mask
from kvledger.sim.setup import check_plan, policies_for, step_timer
from kvledger.sim.timing import StepWork
from kvledger.sim.workload import Request, Workload

Progress = Callable[[int, int], None]  # (requests done, requests total)


@dataclass(frozen=True, slots=True, kw_only=True)
class SimResult:
    summary: SimSummary
    series: TimeSeries
    requests: tuple[RequestRecord, ...]  # finished requests, in finishing order


class Replay:
    def __init__(self, plan: SglangPlan, workload: Workload, config: SimConfig,
                 progress: Sequence[Progress]) -> None:
        self.notes = check_plan(plan, config)
        lay, cap = plan.layout, plan.capacity
        self.plan, self.config, self.progress = plan, config, progress
        attn_dp = lay.deployment.attn_dp_size
        self.workload = workload.share(0, attn_dp) if attn_dp > 1 else workload
        self.page = lay.page_tokens
        self.policies = policies_for(plan, config)
        self.cache = accounting_cache(plan, mamba_chunk_tokens=config.mamba_chunk_tokens,
                                      track_interval_tokens=config.mamba_track_interval_tokens,
                                      host_policy=config.hicache_write_policy,
                                      host_state_backup=config.host_state_backup,
                                      policies=self.policies, store=config.l3)
        # host → device bytes per loaded-back page and state, to time loadbacks
        self.page_bytes, self.slot_bytes = cap.token_bytes * lay.page_tokens, cap.slot_bytes
        self.host = self.cache.tier
        self.counters = Counters()
        self.max_running = cap.max_running_requests
        self.keyer = PageKeyer(self.page)
        self.series = TimeSeries()
        self.unfinished: list[Unfinished] = []
        self.records: list[RequestRecord] = []
        self.pending = deque(self.workload.requests)
        self.num_offered = len(self.workload.requests)
        self.horizon_ms = float("inf")  # no arrival before this but those pending (a fleet's router sets it)
        self.waiting: deque[Running] = deque()
        self.decoding: list[Running] = []  # past prefill, generating
        self.chunked: Running | None = None  # the one request whose prefill is cut in chunks
        self.num_running = 0  # admitted, not finished: chunked + decoding
        self.now_ms = 0.0
        self.spans: list[tuple[int, int]] = []  # prefill chunks of the current step
        self.timed_transfer_bytes = 0
        self.timer, self.timing = step_timer(plan, config)
        self.timed_store_ms = 0.0  # store read time already charged to a step
        self.report_at = 0  # progress is reported again once this many requests are done

    # ---- one step --------------------------------------------------------------------------

    def _arrive(self) -> None:
        while self.pending and self.pending[0].arrival_ms <= self.now_ms:
            request = self.pending.popleft()
            self.counters.arrived += 1
            if reason := self.cache.never_fits(kv_total_tokens(request.prompt_tokens,
                                                               request.output_tokens)):
                self.unfinished.append(Unfinished(rid=request.rid, reason=reason))
                continue
            run = Running(request=request, seq_keys=self.keyer.keys(request))
            self.cache.announce(run.seq_keys, prompt_tokens=request.prompt_tokens)
            self.waiting.append(run)

    def _admit(self, run: Running) -> set[Constraint]:
        """Admit `run` through the cache (an empty set) or name every ledger that is short."""
        cache, states = self.cache, self.cache.states
        # what the serving bound (`kvledger.bound.serving`) lets this match's cache hold
        run.free_pages_at_match = cache.rows.pages.capacity - cache.own_pages
        if states is not None:
            run.free_slots_at_match = states.capacity - cache.held_slots_total
        got = self.cache.admit(run.seq_keys, prompt_tokens=run.prompt_tokens,
                               final_tokens=run.kv_total_tokens)
        if isinstance(got, Shortfall):
            return {c for c, short in ((Constraint.RUNNING, got.rows), (Constraint.TOKENS, got.pages),
                                       (Constraint.STATE, got.slots)) if short}
        run.seq = got
        c = self.counters
        c.admitted += 1
        c.prompt_tokens += run.prompt_tokens
        c.hit_tokens += got.hit_tokens
        c.usable_hit_tokens += got.usable_hit_tokens
        return set()

    def _chunk(self, run: Running, budget_tokens: int) -> int:
        """Run one prefill chunk of at most `budget_tokens`; return the tokens computed."""
        seq, prompt = run.seq, run.prompt_tokens
        start = seq.computed_tokens
        end = min(prompt, start + budget_tokens)
        if end < prompt:
            end = align_down(end, self.page)  # SGLang cuts a chunk to whole pages
            if end <= start:
                return 0
        num = end - start
        self.spans.append((start, end))
        self.cache.extend(seq, num)
        # SGLang caches every prefill forward of a request that goes on running
        # (cache_unfinished_req, "so others can match"); a finishing one is cached at release.
        self.cache.commit(seq, run.seq_keys, num,
                          cache_unfinished=end < prompt or run.output_tokens > 1)
        self.counters.prefill_tokens += num
        if end == prompt and run.output_tokens:
            run.generated_tokens = 1  # the first token is sampled by the prefill pass
            self.counters.decode_tokens += 1
        return num

    def _prefill(self) -> tuple[int, set[Constraint], list[Running]]:
        budget = self.config.chunked_prefill_tokens
        computed, started = 0, []
        self.spans = []
        if self.chunked is not None:
            done = self._chunk(self.chunked, budget)
            budget, computed = budget - done, computed + done
            if not self.chunked.in_prefill:
                started.append(self.chunked)
                self.chunked = None
        blocked: set[Constraint] = set()
        while self.waiting and budget > 0 and self.chunked is None:
            head = self.waiting[0]
            blocked = self._admit(head)
            if blocked:
                break
            self.waiting.popleft()
            self.num_running += 1
            head.admitted_ms = self.now_ms
            self.counters.queue_ms += self.now_ms - head.request.arrival_ms
            done = self._chunk(head, budget)
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
        next_ms = self.pending[0].arrival_ms if self.pending else self.horizon_ms
        if next_ms < float("inf") and not (blocked and self.waiting):
            gap = next_ms - self.now_ms
            steps = min(steps, max(1, int(np.ceil(gap / step_ms))))
        return max(steps, 1)

    def step(self) -> None:
        computed, blocked, started = self._prefill()
        decoding = self.decoding
        contexts = tuple(r.prompt_tokens + r.generated_tokens for r in decoding)
        st = self.cache.stats
        moved = (st.loadback_tokens // self.page * self.page_bytes
                 + st.loadback_states * self.slot_bytes)
        transfer, self.timed_transfer_bytes = moved - self.timed_transfer_bytes, moved
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
        decode = self.cache.decode
        for run in decoding:
            decode(run.seq, steps)
            run.generated_tokens += steps
        decoded = len(decoding) * steps
        self.counters.decode_tokens += decoded
        done = [r for r in decoding if r.generated_tokens >= r.output_tokens]
        done += [r for r in started if r.generated_tokens >= r.output_tokens]
        release, c = self.cache.release, self.counters
        for run in done:
            release(run.seq, run.seq_keys)
            c.finished += 1
        if done:
            finished = {id(r) for r in done}
            self.num_running -= len(done)
            decoding = [r for r in decoding if id(r) not in finished]
        decoding += [r for r in started if r.generated_tokens < r.output_tokens]
        self.decoding = decoding
        # the admitting step waits its store reads (their prefetch ran in `_prefill`)
        read_ms = self.cache.store.stats.read_wait_ms
        wait_ms, self.timed_store_ms = read_ms - self.timed_store_ms, read_ms
        elapsed = steps * step_ms + wait_ms
        for run in started:  # sampled by this step's pass, out when it ends
            run.first_token_ms = self.now_ms + step_ms + wait_ms
        self.now_ms += elapsed
        for run in done:
            self.records.append(RequestRecord(
                rid=run.request.rid, arrival_ms=run.request.arrival_ms,
                admitted_ms=run.admitted_ms, first_token_ms=run.first_token_ms,
                finished_ms=self.now_ms, prompt_tokens=run.prompt_tokens,
                output_tokens=run.output_tokens, hit_tokens=run.seq.hit_tokens,
                usable_hit_tokens=run.seq.usable_hit_tokens,
                free_slots_at_match=run.free_slots_at_match,
                free_pages_at_match=run.free_pages_at_match))
        c.steps += steps
        for constraint in blocked:
            c.blocked_ms[constraint] += elapsed
        self._record(steps, computed, decoded, blocked)

    def _record(self, steps: int, computed: int, decoded: int, blocked: set[Constraint]) -> None:
        cache, c = self.cache, self.counters
        tree = cache.tree.sizes()  # tree units are pages here
        own, held_slots = cache.own_pages, cache.held_slots_total
        pages, states = cache.rows.pages, cache.states
        free_pages = pages.num_free
        free_slots = 0 if states is None else states.num_free
        cache_slots = tree.mamba_evictable_slots + tree.mamba_protected_slots
        c.peak_pages_used = max(c.peak_pages_used, pages.capacity - free_pages)
        c.peak_pages_pinned = max(c.peak_pages_pinned, own + tree.full_protected_tokens)
        if states is not None:
            c.peak_slots_used = max(c.peak_slots_used, states.capacity - free_slots)
        c.peak_slots_pinned = max(c.peak_slots_pinned, held_slots + tree.mamba_protected_slots)
        c.peak_running = max(c.peak_running, self.num_running)
        host = self.host.usage()
        self.series.append((
            self.now_ms, steps, self.num_running, len(self.waiting), computed, decoded, own,
            tree.full_protected_tokens, tree.full_evictable_tokens, free_pages,
            cache.reserved_pages, held_slots, cache_slots, free_slots, c.prompt_tokens,
            c.hit_tokens, c.usable_hit_tokens, blocked_mask(blocked), *host,
        ))

    # ---- the whole run ---------------------------------------------------------------------

    def check_integrity(self) -> None:
        running = self.decoding + ([self.chunked] if self.chunked else [])
        if len(running) != self.num_running or len(self.cache.running) != self.num_running:
            raise RuntimeError(f"{self.num_running} requests admitted and unfinished, "
                               f"{len(running)} scheduled, {len(self.cache.running)} in the cache")
        self.cache.check_integrity()

    def offer(self, request: Request) -> None:
        """Queue one more request (a fleet's router placing it at its arrival)."""
        self.pending.append(request)
        self.num_offered += 1

    def advance(self, until_ms: float = float("inf")) -> None:
        """Run every step that starts before `until_ms` (all of them by default); a later
        arrival can only be offered once the clock is there."""
        every = self.config.integrity_every_steps
        total = self.num_offered
        while True:
            self._arrive()
            if not self.waiting and not self.num_running:
                if not self.pending or self.pending[0].arrival_ms > until_ms:
                    break
                self.now_ms = max(self.now_ms, self.pending[0].arrival_ms)
                continue
            if self.now_ms >= until_ms:
                break
            self.step()
            if every and len(self.series) % every == 0:
                self.check_integrity()
            done = self.counters.finished + len(self.unfinished)
            if done >= self.report_at:
                for observer in self.progress:
                    observer(done, total)
                self.report_at = done + max(total // 200, 1)

    def finish(self, wall_s: float) -> SimResult:
        """The result once `advance()` has run everything offered."""
        assert not self.pending and not self.waiting and not self.num_running, "unfinished run"
        self.check_integrity()
        for observer in self.progress:
            observer(self.num_offered, self.num_offered)
        return SimResult(summary=self._summary(wall_s), series=self.series,
                         requests=tuple(self.records))

    def run(self) -> SimResult:
        start = time.perf_counter()
        self.advance()
        return self.finish(time.perf_counter() - start)

    def _summary(self, wall_s: float) -> SimSummary:
        cap, cache, c = self.plan.capacity, self.cache, self.counters
        stats = self.host.stats()
        st = cache.stats
        c.checkpoints_saved, c.checkpoints_existing = st.checkpoints_saved, st.checkpoints_existing
        c.checkpoints_skipped = st.checkpoints_skipped
        c.checkpoints_declined = st.checkpoints_declined
        c.loadback_bytes = self.timed_transfer_bytes
        host_note = ("not available: no host tier in this run (--enable-hierarchical-cache "
                     "is off)" if stats is None else
                     f"{stats.policy.value}{stats.state_backup_label}: host pools of "
                     f"{stats.capacity_pages:,} pages and "
                     f"{stats.capacity_slots:,} state slots, replayed in accounting mode "
                     "(indices only, no bytes moved)")
        evicted = self.host.device_evictions()  # tree units: pages
        return SimSummary(
            workload=self.workload.name, num_requests=self.num_offered,
            page_tokens=self.page, token_pages=cache.rows.pages.capacity,
            state_slots=0 if cache.states is None else cache.states.capacity,
            max_running_requests=self.max_running,
            token_bytes=cap.token_bytes, slot_bytes=cap.slot_bytes, counters=c,
            unfinished=tuple(self.unfinished), evicted_pages=evicted.full,
            evicted_slots=evicted.states, host=stats, host_note=host_note,
            duration_ms=self.now_ms, wall_s=wall_s, timing=self.timing,
            policies=self.policies.label,
            latency=LatencyStats.of(self.records, duration_ms=self.now_ms) if self.records
            else None, notes=tuple(self.notes),
            store=None if self.config.l3 is None else store_summary(self.cache.store),
        )


def simulate(plan: SglangPlan, workload: Workload, config: SimConfig | None = None, *,
             progress: Sequence[Progress] = ()) -> SimResult:
    """Replay `workload` on one rank of `plan`; see the module docstring. The host tier is
    the one the plan's deployment asks for, with the configured write policy."""
    return Replay(plan, workload, config or SimConfig(), progress).run()
