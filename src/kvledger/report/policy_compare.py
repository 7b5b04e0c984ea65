"""`simulate --compare`: several state policies on one trace and one memory, side by side.

Each policy pair runs the full replay (`kvledger.sim.replay`: concurrency, chunked
prefill, outputs, the host tier when enabled, the time model) on the same plan and
workload; rows report token hit, usable hit, state evictions, checkpoints saved and TTFT.

The FULL-only ceiling is what prefix caching could reuse if the model had no state at all:
the same bytes (KV pool plus state pool) given to KV alone (`kvledger.sim.ceiling`). It is
sequential (one request at a time, prompts only), so it bounds the hit rate for that memory,
not the TTFT; its TTFT column is empty.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from rich import box
from rich.table import Table

from kvledger.cache.policies import StateAdmission, StateEviction
from kvledger.report.show import show_fraction, show_ms, show_ratio
from kvledger.sglang.plan import SglangPlan
from kvledger.sim.ceiling import ceiling_pool_tokens, full_only_hits
from kvledger.sim.config import SimConfig
from kvledger.sim.metrics import SimSummary
from kvledger.sim.replay import simulate
from kvledger.sim.workload import Workload

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


@dataclass(frozen=True, slots=True, kw_only=True)
class Comparison:
    rows: tuple[PolicyRow, ...]  # policies in the order run, then the ceiling
    ceiling_pool_tokens: int

    @property
    def baseline(self) -> PolicyRow:
        return self.rows[0]


def _row(label: str, s: SimSummary) -> PolicyRow:
    c = s.counters
    return PolicyRow(label=label, token_hit=c.token_hit_rate, usable_hit=c.usable_hit_rate,
                     state_evictions=s.evicted_slots, checkpoints_saved=c.checkpoints_saved,
                     ttft_p95_ms=s.latency.ttft_ms.p95 if s.latency else None, summary=s)


def full_only_ceiling(plan: SglangPlan, workload: Workload) -> tuple[PolicyRow, int]:
    cap = plan.capacity
    pool = ceiling_pool_tokens(token_bytes=cap.token_bytes, slot_bytes=cap.slot_bytes,
                               state_slots=cap.state_slots,
                               max_total_tokens=cap.max_total_tokens,
                               page_tokens=plan.layout.page_tokens)
    requests = workload.requests
    hits = full_only_hits(requests, page_tokens=plan.layout.page_tokens, pool_tokens=pool)
    prompt = sum(r.prompt_tokens for r in requests)
    hit = int(hits.sum()) / prompt if prompt else 0.0
    return PolicyRow(label="FULL-only ceiling", token_hit=hit,
                     usable_hit=hit, state_evictions=None, checkpoints_saved=None,
                     ttft_p95_ms=None), pool


# (what runs now, requests done, requests total): the replays and then the ceiling, each
# counted as one pass over the workload's requests.
CompareProgress = Callable[[str, int, int], None]


def compare_policies(plan: SglangPlan, workload: Workload, config: SimConfig,
                     pairs: Sequence[Pair] = COMPARE_PAIRS, *,
                     on_progress: CompareProgress | None = None) -> Comparison:
    """Run every pair (the first is the baseline ratios refer to) and the ceiling."""
    rows = []
    n = len(workload.requests)
    total = n * (len(pairs) + 1)

    def report(label: str, base: int) -> tuple:
        if on_progress is None:
            return ()
        on_progress(label, base, total)
        return (lambda done, _of: on_progress(label, base + done, total),)

    for i, (admission, eviction) in enumerate(pairs):
        run = replace(config, state_admission=admission, state_eviction=eviction)
        label = f"{admission.value} + {eviction.value}"
        summary = simulate(plan, workload, run, progress=report(label, i * n)).summary
        rows.append(_row(summary.policies, summary))
    report("FULL-only ceiling", len(pairs) * n)
    ceiling, pool = full_only_ceiling(plan, workload)
    if on_progress is not None:
        on_progress("FULL-only ceiling", total, total)
    rows.append(ceiling)
    return Comparison(rows=tuple(rows), ceiling_pool_tokens=pool)


def compare_table(comparison: Comparison) -> Table:
    base = comparison.baseline
    table = Table(title=f"State policies on one trace and memory (×: over {base.label})",
                  title_justify="left", box=box.SIMPLE_HEAD, show_edge=False)
    table.add_column("admission + eviction", no_wrap=True)
    for name in ("token\nhit", "usable\nhit", "×", "states\nevicted", "TTFT\np95", "×"):
        table.add_column(name, justify="right")
    for row in comparison.rows:
        ratio = show_ratio(row.usable_hit / base.usable_hit) if base.usable_hit else "—"
        ttft = "—" if row.ttft_p95_ms is None else show_ms(row.ttft_p95_ms)
        ttft_ratio = ("—" if row.ttft_p95_ms is None or not base.ttft_p95_ms
                      else show_ratio(row.ttft_p95_ms / base.ttft_p95_ms))
        table.add_row(row.label, show_fraction(row.token_hit), show_fraction(row.usable_hit),
                      ratio,
                      "—" if row.state_evictions is None else f"{row.state_evictions:,}",
                      ttft, ttft_ratio)
    table.caption = ("states evicted: from device. FULL-only ceiling: no states, the "
                     f"same bytes as a KV pool of {comparison.ceiling_pool_tokens:,} tokens, "
                     "sequential (prompts only): a bound, not a policy; the policy rows are "
                     "serving replays (token hit = KV matched, usable = KV ending at a state; "
                     "docs: Three hit rates). Every policy is lossless.")
    return table


def comparison_json(comparison: Comparison) -> dict:
    """The body of `simulate --compare --json` (`kvledger.simulate-compare/1` in the common
    envelope): baseline, ceiling_pool_tokens, rows[{policy, token_hit, usable_hit,
    state_evictions, checkpoints_saved, ttft_p95_ms}] (null where the ceiling has none)."""
    return {
        "baseline": comparison.baseline.label,
        "ceiling_pool_tokens": comparison.ceiling_pool_tokens,
        "rows": [{"policy": r.label, "token_hit": r.token_hit, "usable_hit": r.usable_hit,
                  "state_evictions": r.state_evictions, "checkpoints_saved": r.checkpoints_saved,
                  "ttft_p95_ms": r.ttft_p95_ms} for r in comparison.rows],
    }
