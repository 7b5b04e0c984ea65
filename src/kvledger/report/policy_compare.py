"""`simulate --compare`: several state policies on one trace and one memory, side by side.

Each policy pair runs the full replay (`kvledger.sim.replay`: concurrency, chunked
prefill, outputs, the host tier when enabled, the time model) on the same plan and
workload; rows report token hit, usable hit, state evictions, checkpoints saved and TTFT.

The FULL-only ceiling is what prefix caching could reuse if the model had no state at all:
the same bytes (KV pool plus state pool) given to KV alone (`kvledger.sim.ceiling`). It is
sequential (one request at a time, prompts only), so it bounds the hit rate for that memory,
not the TTFT; its TTFT column is empty.

The offline bound (`kvledger.bound`) is the most usable hit any admission and eviction of
states and KV could reach on the same pools (the replay's T token pages and K state slots,
plus the host tier's when one is enabled), knowing the whole trace: exact on tiny traces, a
proven upper bound (the smaller of two relaxations, each solved exactly) otherwise. Every row
reports its usable hit as a fraction of it (`fraction_of_bound`). With a store tier
(--l3-size) the bound does not cover the store's capacity and is not reported.

The replays, the ceiling and the bound are independent runs (`compare_tasks`): a runner
(`kvledger.core.runner`, `--jobs N` / `--ray`) may run them at once; the rows are the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from kvledger.bound import BoundTrace, OfflineBound, offline_bound
from kvledger.bound.serving import ServingBound, serving_bound
from kvledger.cache.policies import StateAdmission, StateEviction
from kvledger.core.runner import SERIAL, Runner, RunObserver, Task
from kvledger.sglang.plan import SglangPlan
from kvledger.sim.ceiling import ceiling_pool_tokens, full_only_hits
from kvledger.sim.config import SimConfig
from kvledger.sim.metrics import SimSummary
from kvledger.sim.replay import Progress, SimResult, simulate
from kvledger.sim.workload import Request, Workload

Pair = tuple[StateAdmission, StateEviction]
DEFAULT_PAIR: Pair = (StateAdmission.ENGINE, StateEviction.LRU)
# What `--compare` runs when no pair is named: the engine, each published idea, and ours.
COMPARE_PAIRS: tuple[Pair, ...] = (
    DEFAULT_PAIR,
    (StateAdmission.ENGINE, StateEviction.FLOP_AWARE),
    (StateAdmission.MARCONI, StateEviction.LRU),
    (StateAdmission.MARCONI, StateEviction.FLOP_AWARE),
    (StateAdmission.REUSE_FILTERED, StateEviction.LRU),
    (StateAdmission.GHOST_BRANCH, StateEviction.LRU),
    (StateAdmission.GHOST_BRANCH, StateEviction.KEEP_JUNCTIONS),
    (StateAdmission.GHOST_BRANCH, StateEviction.FLOP_AWARE),
    (StateAdmission.SEGMENT_BRANCH, StateEviction.LRU),
    (StateAdmission.SEGMENT_BRANCH, StateEviction.SPENT_FIRST),
    (StateAdmission.GHOST_BRANCH, StateEviction.HIT_DENSITY),
    (StateAdmission.QUEUE_BRANCH, StateEviction.QUEUE_AWARE),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicyRow:
    label: str
    token_hit: float
    usable_hit: float
    state_evictions: int | None  # None: the ceiling has no states
    checkpoints_saved: int | None
    ttft_p95_ms: float | None  # None: not timed (the sequential ceiling)
    summary: SimSummary | None = None
    fraction_of_bound: float | None = None  # usable hit / the bound's; None: no bound
    serving_bound: ServingBound | None = None  # this replay's own; None: not computed

    @property
    def fraction_of_serving_bound(self) -> float | None:
        return None if self.serving_bound is None else self.serving_bound.fraction(
            self.usable_hit)


@dataclass(frozen=True, slots=True, kw_only=True)
class BoundRow:
    """The offline bound on one comparison's trace and pools."""

    bound: OfflineBound
    prompt_tokens: int

    @property
    def usable_hit(self) -> float:
        return self.bound.usable_hit_rate(self.prompt_tokens)

    @property
    def label(self) -> str:
        return f"offline bound ({self.bound.method.value})"

    def fraction(self, usable_hit: float) -> float | None:
        return usable_hit / self.usable_hit if self.usable_hit else None


@dataclass(frozen=True, slots=True, kw_only=True)
class Comparison:
    rows: tuple[PolicyRow, ...]  # policies in the order run, then the ceiling
    ceiling_pool_tokens: int
    bound: BoundRow | None = None  # None: not computed (a store tier in the runs)

    @property
    def baseline(self) -> PolicyRow:
        return self.rows[0]


def _row(plan: SglangPlan, workload: Workload, result: SimResult) -> PolicyRow:
    s = result.summary
    c = s.counters
    return PolicyRow(label=s.policies, token_hit=c.token_hit_rate, usable_hit=c.usable_hit_rate,
                     state_evictions=s.evicted_slots, checkpoints_saved=c.checkpoints_saved,
                     ttft_p95_ms=s.latency.ttft_ms.p95 if s.latency else None, summary=s,
                     serving_bound=_serving_bound(plan, workload, result))


def _serving_bound(plan: SglangPlan, workload: Workload, result: SimResult
                   ) -> ServingBound | None:
    """The replay's own serving bound (`kvledger.bound.serving`); None with a store tier
    (outside the model) or without states."""
    s = result.summary
    if s.store is not None or plan.layout.state is None:
        return None
    host = s.host
    return serving_bound(replayed_requests(plan, workload, s), result.requests,
                         page_tokens=s.page_tokens,
                         device_pages=s.token_pages,
                         host_pages=host.capacity_pages if host else 0,
                         host_slots=host.capacity_slots if host else 0)


def replayed_requests(plan: SglangPlan, workload: Workload,
                      unfinished: SimSummary | None = None) -> tuple[Request, ...]:
    """The requests one rank replays: rank 0's round-robin share with attention DP, as
    `kvledger.sim.replay` takes it, less those a replay (`unfinished`'s) left unfinished
    because they never fit the pools (the same for every policy); the ceiling and the bound
    judge exactly these, so their rates share the policy rows' denominator."""
    attn_dp = plan.layout.deployment.attn_dp_size
    requests = (workload.share(0, attn_dp) if attn_dp > 1 else workload).requests
    if unfinished is None or not unfinished.unfinished:
        return requests
    skip = {u.rid for u in unfinished.unfinished}
    return tuple(r for r in requests if r.rid not in skip)


def full_only_ceiling(plan: SglangPlan, workload: Workload,
                      replayed: PolicyRow | None = None) -> tuple[PolicyRow, int]:
    cap = plan.capacity
    pool = ceiling_pool_tokens(token_bytes=cap.token_bytes, slot_bytes=cap.slot_bytes,
                               state_slots=cap.state_slots,
                               max_total_tokens=cap.max_total_tokens,
                               page_tokens=plan.layout.page_tokens)
    requests = replayed_requests(plan, workload, replayed.summary if replayed else None)
    hits = full_only_hits(requests, page_tokens=plan.layout.page_tokens, pool_tokens=pool)
    prompt = sum(r.prompt_tokens for r in requests)
    hit = int(hits.sum()) / prompt if prompt else 0.0
    return PolicyRow(label="FULL-only ceiling", token_hit=hit,
                     usable_hit=hit, state_evictions=None, checkpoints_saved=None,
                     ttft_p95_ms=None), pool


def bound_row(plan: SglangPlan, workload: Workload, replayed: PolicyRow) -> BoundRow | None:
    """The offline bound on the pools `summary`'s replay had (device, plus host when a host
    tier ran; the state pool less the slots one running request holds), over the requests
    it replayed (rank 0's share with attention DP)."""
    summary = replayed.summary
    assert summary is not None, "the bound judges a replay's requests"
    if summary.store is not None:
        return None
    requests = replayed_requests(plan, workload, summary)
    host = summary.host
    pages = summary.token_pages + (host.capacity_pages if host else 0)
    # the request running in the offline model holds its slots; the rest can cache states
    slots = max(summary.state_slots - plan.layout.held_slots_per_request, 0) + (
        host.capacity_slots if host else 0)
    trace = BoundTrace.of(requests, page_tokens=summary.page_tokens)
    bound = offline_bound(trace, token_pages=pages,
                          state_slots=slots if plan.layout.state is not None else None)
    return BoundRow(bound=bound, prompt_tokens=sum(r.prompt_tokens for r in requests))


def replay_pair(plan: SglangPlan, workload: Workload, config: SimConfig, pair: Pair,
                tick: Progress | None = None) -> PolicyRow:
    """One row: the serving replay of `config` under the pair's state admission and
    eviction, with its serving bound."""
    admission, eviction = pair
    run = replace(config, state_admission=admission, state_eviction=eviction)
    return _row(plan, workload, simulate(plan, workload, run, progress=(tick,) if tick else ()))


# Relative run times (`Task.cost`, a scheduling hint only), as measured serially on the
# shared synthetic trace: a replay 1.0-1.8 s, one with FLOP-aware eviction 1.8-3.4 s, the
# offline bound 3.0 s, the FULL-only ceiling 0.4 s.
REPLAY_COST, FLOP_AWARE_COST, BOUND_COST, CEILING_COST = 1.0, 1.5, 2.0, 0.25


def compare_tasks(plan: SglangPlan, workload: Workload, config: SimConfig,
                  pairs: Sequence[Pair] = COMPARE_PAIRS) -> list[Task]:
    """The comparison's independent runs (`kvledger.core.runner`): the baseline replay, the
    ceiling and the bound (both judge the requests the baseline finished, so they wait on
    it), then the other pairs."""
    assert pairs, "compare_policies: no pair to replay"
    args = (plan, workload)

    def replay(pair: Pair) -> Task:
        cost = FLOP_AWARE_COST if pair[1].prices_flops else REPLAY_COST
        return Task(fn=replay_pair, args=(*args, config, pair), ticks=True, cost=cost,
                    label=f"{pair[0].value} + {pair[1].value}")

    return [replay(pairs[0]),
            Task(fn=full_only_ceiling, args=args, label="FULL-only ceiling", after=0,
                 cost=CEILING_COST),
            Task(fn=bound_row, args=args, label="offline bound", after=0, cost=BOUND_COST),
            *(replay(pair) for pair in pairs[1:])]


def compare_policies(plan: SglangPlan, workload: Workload, config: SimConfig,
                     pairs: Sequence[Pair] = COMPARE_PAIRS, *, runner: Runner = SERIAL,
                     observer: RunObserver | None = None) -> Comparison:
    """Run every pair (the first is the baseline ratios refer to), the ceiling and the bound,
    on `runner` (`compare_tasks`); every runner gives the serial run's rows."""
    baseline, (ceiling, pool), bound, *others = runner.run(
        compare_tasks(plan, workload, config, pairs), observer)
    rows = [baseline, *others, ceiling]
    if bound is not None:
        rows = [replace(r, fraction_of_bound=bound.fraction(r.usable_hit)) for r in rows]
    return Comparison(rows=tuple(rows), ceiling_pool_tokens=pool, bound=bound)
