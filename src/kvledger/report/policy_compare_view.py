"""`simulate --compare`'s table and JSON body, from a `Comparison`
(`kvledger.report.policy_compare`)."""

from __future__ import annotations

from rich import box
from rich.table import Table

from kvledger.bound.serving import ServingBound
from kvledger.report.policy_compare import BoundRow, Comparison
from kvledger.report.show import show_fraction, show_ms, show_ratio


def compare_table(comparison: Comparison) -> Table:
    base = comparison.baseline
    table = Table(title=f"State policies on one trace and memory (×: over {base.label})",
                  title_justify="left", box=box.SIMPLE_HEAD, show_edge=False)
    table.add_column("admission + eviction", no_wrap=True)
    for name in ("token\nhit", "usable\nhit", "×", "of\nbound", "serving\nbound",
                 "of it", "states\nevicted", "TTFT\np95", "×"):
        table.add_column(name, justify="right")
    for row in comparison.rows:
        ratio = show_ratio(row.usable_hit / base.usable_hit) if base.usable_hit else "—"
        ttft = "—" if row.ttft_p95_ms is None else show_ms(row.ttft_p95_ms)
        ttft_ratio = ("—" if row.ttft_p95_ms is None or not base.ttft_p95_ms
                      else show_ratio(row.ttft_p95_ms / base.ttft_p95_ms))
        of_bound = "—" if row.fraction_of_bound is None else show_fraction(row.fraction_of_bound)
        serving = row.serving_bound
        of_serving = row.fraction_of_serving_bound
        table.add_row(row.label, show_fraction(row.token_hit), show_fraction(row.usable_hit),
                      ratio, of_bound, "—" if serving is None else show_fraction(serving.usable_hit),
                      "—" if of_serving is None else show_fraction(of_serving),
                      "—" if row.state_evictions is None else f"{row.state_evictions:,}",
                      ttft, ttft_ratio)
    bound = comparison.bound
    if bound is not None:
        table.add_row(bound.label, "—", show_fraction(bound.usable_hit), "—",
                      show_fraction(1.0), "—", "—", "—", "—", "—")
    table.caption = ("states evicted: from device. FULL-only ceiling: no states, the "
                     f"same bytes as a KV pool of {comparison.ceiling_pool_tokens:,} tokens, "
                     "sequential (prompts only): a bound, not a policy; the policy rows are "
                     "serving replays (token hit = KV matched, usable = KV ending at a state; "
                     "docs: Three hit rates). Every policy is lossless. "
                     + _bound_caption(comparison.bound)
                     + " Serving bound: the most usable hit any choice of states reaches on that "
                     "row's own schedule, less the slots its running requests held at each "
                     "admission (docs: Offline bound).")
    return table


def _bound_caption(bound: BoundRow | None) -> str:
    if bound is None:
        return "No offline bound: the store tier's capacity is outside it."
    b = bound.bound
    kind = ("exact (every schedule tried)" if b.exact else
            "a proven upper bound, min(KV relaxation, state relaxation)")
    slots = "no states" if b.state_slots is None else f"{b.state_slots:,} cache state slots"
    return (f"Offline bound: {b.token_pages:,} token pages and {slots}, requests one at a "
            f"time, {kind}; of bound = usable hit / the bound's (docs: Offline bound).")


def bound_json(bound: BoundRow | None) -> dict | None:
    if bound is None:
        return None
    b = bound.bound
    rate = bound.prompt_tokens or 1
    return {"method": b.method.value, "exact": b.exact, "usable_hit": bound.usable_hit,
            "usable_hit_tokens": b.usable_hit_tokens, "prompt_tokens": bound.prompt_tokens,
            "kv_relaxation_hit": b.kv_hit_pages * b.page_tokens / rate,
            "state_relaxation_hit": None if b.state_hit_pages is None
            else b.state_hit_pages * b.page_tokens / rate,
            "token_pages": b.token_pages, "state_slots": b.state_slots}


def serving_bound_json(bound: ServingBound | None) -> dict | None:
    if bound is None:
        return None
    rate = bound.prompt_tokens or 1
    return {"usable_hit": bound.usable_hit,
            "usable_hit_tokens": bound.usable_hit_pages * bound.page_tokens,
            "kv_relaxation_hit": bound.kv_hit_pages * bound.page_tokens / rate,
            "state_relaxation_hit": bound.state_hit_pages * bound.page_tokens / rate,
            "prompt_tokens": bound.prompt_tokens, "mean_free_slots": bound.mean_free_slots}


def comparison_json(comparison: Comparison) -> dict:
    """The body of `simulate --compare --json` (`kvledger.simulate-compare/1` in the common
    envelope): baseline, ceiling_pool_tokens, rows[{policy, token_hit, usable_hit,
    fraction_of_bound, state_evictions, checkpoints_saved, ttft_p95_ms}] (null where the
    ceiling has none; fraction_of_bound null without a bound), serving_bound{usable_hit,
    usable_hit_tokens, kv_relaxation_hit, state_relaxation_hit, prompt_tokens,
    mean_free_slots} and fraction_of_serving_bound (each
    row's own; null for the ceiling, without states or with a store tier), bound{method (exhaustive |
    relaxation), exact, usable_hit, usable_hit_tokens, prompt_tokens, kv_relaxation_hit,
    state_relaxation_hit (null without states), token_pages, state_slots (null without
    states)} (null with a store tier)."""
    return {
        "baseline": comparison.baseline.label,
        "ceiling_pool_tokens": comparison.ceiling_pool_tokens,
        "rows": [{"policy": r.label, "token_hit": r.token_hit, "usable_hit": r.usable_hit,
                  "fraction_of_bound": r.fraction_of_bound,
                  "serving_bound": serving_bound_json(r.serving_bound),
                  "fraction_of_serving_bound": r.fraction_of_serving_bound,
                  "state_evictions": r.state_evictions, "checkpoints_saved": r.checkpoints_saved,
                  "ttft_p95_ms": r.ttft_p95_ms} for r in comparison.rows],
        "bound": bound_json(comparison.bound),
    }
