"""HTML tables for the report page: ledgers, capacity, simulation results. Escaped, no scripts.

>>> from kvledger.core.ledger import Ledger, LedgerRow
>>> print(ledger_table(Ledger(name="per token", per="token", rows=(
...     LedgerRow(component="KV <row>", count=11, unit_bytes=528),))).splitlines()[0])
<table class="ledger"><caption>per token — 5,808 B per token</caption>
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape

from kvledger.report.plan_view import slack_share
from kvledger.report.show import show_bytes, show_ms, show_ratio, show_share
from kvledger.sglang.ledger import Ledger
from kvledger.sglang.plan import SglangPlan
from kvledger.sim.metrics import SimSummary
from kvledger.sim.series import Constraint


def table(caption: str, header: Sequence[str], rows: Iterable[Sequence[object]],
          css: str = "") -> str:
    cls = f' class="{css}"' if css else ""
    out = [f"<table{cls}><caption>{escape(caption)}</caption>",
           "<tr>" + "".join(f"<th>{escape(h)}</th>" for h in header) + "</tr>"]
    for row in rows:
        out.append("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in row) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def ledger_table(ledger: Ledger) -> str:
    rows = [(r.component, r.detail, f"{r.count:,}", f"{r.unit_bytes:,}", f"{r.total_bytes:,}")
            for r in ledger.rows]
    rows += [(f"({r.component})", r.detail, f"{r.count:,}", f"{r.unit_bytes:,}",
              f"({r.total_bytes:,})") for r in ledger.memo]
    rows.append(("total", "", "", "", f"{ledger.total_bytes:,}"))
    return table(f"{ledger.name} — {ledger.total_bytes:,} B per {ledger.per}",
                 ("component", "detail", "count", "unit bytes", "total bytes"), rows, "ledger")


def capacity_table(plan: SglangPlan) -> str:
    cap, lay = plan.capacity, plan.layout
    rows: list[tuple[str, str, str]] = [
        ("memory", cap.memory.source, ""),
        ("slack (1 − mem_fraction_static)", slack_share(plan), f"{cap.slack_bytes:,}"),
        ("multimodal reservation", "", f"{cap.mm_reservation_bytes:,}"),
        ("rest for the cache", "", f"{cap.rest_bytes:,}"),
    ]
    if cap.slot_bytes:
        rows.append(("K state slots (+1 padding)", f"{cap.state_slots:,}", f"{cap.state_pool_bytes:,}"))
    rows.append((f"T tokens (+{lay.page_tokens} padding)", f"{cap.max_total_tokens:,}",
                 f"{cap.token_pool_bytes:,}"))
    rows.append(("unused after flooring", "", f"{cap.unused_bytes:,}"))
    rows.append(("side buffers (unbudgeted)", "", f"{cap.side.total_bytes:,}"))
    for limit, n in cap.limits.items():
        rows.append((f"N limit: {limit.value}", f"{n:,}",
                     "binds" if limit is cap.binding
                     else f"headroom {show_ratio(n / cap.max_running_requests)}"))
    rows.append(("N running requests", f"{cap.max_running_requests:,}", f"binding: {cap.binding.value}"))
    return table("Capacity per rank", ("quantity", "value", "bytes"), rows, "capacity")


_pct = show_share


def totals_table(plan: SglangPlan) -> str:
    """The whole deployment, as `kvledger plan` prints it: every worker, every GPU."""
    tot = plan.totals
    rows = [("running requests (N × workers)", f"{tot.running_requests:,}"),
            ("tokens (T × workers)", f"{tot.tokens:,}"),
            ("token pools HBM (× GPUs)", show_bytes(tot.token_pool_bytes))]
    if tot.state_pool_bytes:
        rows.append(("state pools HBM (× GPUs)", show_bytes(tot.state_pool_bytes)))
    if tot.verify_bytes:
        rows.append(("verify scratch HBM (× GPUs)", show_bytes(tot.verify_bytes)))
    rows.append(("side buffers HBM (× GPUs)", show_bytes(tot.side_bytes)))
    return table(f"Deployment — {tot.ranks:,} GPUs, {tot.workers:,} attention-DP worker"
                 f"{'s' if tot.workers > 1 else ''}", ("quantity", "total"), rows, "totals")


def latency_table(s: SimSummary) -> str | None:
    """TTFT and TPOT percentiles and throughput, under the time model the run used."""
    lat = s.latency
    if lat is None:
        return None
    rows = [(label, *(show_ms(v) for v in (p.mean, p.p50, p.p95, p.p99)))
            for label, p in (("TTFT", lat.ttft_ms), ("TPOT", lat.tpot_ms))]
    rows.append(("throughput", f"{lat.output_tokens_per_s:,.0f} output tok/s",
                 f"{lat.total_tokens_per_s:,.0f} total tok/s", "", ""))
    return table(f"Latency ({s.timing})", ("", "mean", "p50", "p95", "p99"), rows, "latency")


def sim_tables(s: SimSummary) -> str:
    c = s.counters
    hits = table("Prefix cache", ("tokens", "count", "of prompt"), [
        ("prompt tokens", f"{c.prompt_tokens:,}", "100 %"),
        ("KV hit (token hit rate)", f"{c.hit_tokens:,}", _pct(c.hit_tokens, c.prompt_tokens)),
        ("usable hit: KV with a state", f"{c.usable_hit_tokens:,}",
         _pct(c.usable_hit_tokens, c.prompt_tokens)),
        ("recomputed: state checkpoint shallower than the KV", f"{c.recomputed_tokens:,}",
         _pct(c.recomputed_tokens, c.prompt_tokens)),
        ("prefill computed", f"{c.prefill_tokens:,}", _pct(c.prefill_tokens, c.prompt_tokens)),
        ("decoded", f"{c.decode_tokens:,}", ""),
    ])
    span = s.duration_ms
    blocked = c.blocked_ms
    page_bytes = s.page_tokens * s.token_bytes
    ledgers = table("Ledgers on one rank", (
        "ledger", "capacity", "peak used", "peak pinned", "time the queue was blocked", "evicted"), [
        (Constraint.TOKENS.value, f"{s.token_pages:,} pages", f"{c.peak_pages_used:,}",
         f"{c.peak_pages_pinned:,}", _pct(blocked[Constraint.TOKENS], span),
         f"{s.evicted_pages:,} pages ({show_bytes(s.evicted_pages * page_bytes)})"),
        (Constraint.STATE.value, f"{s.state_slots:,} slots", f"{c.peak_slots_used:,}",
         f"{c.peak_slots_pinned:,}", _pct(blocked[Constraint.STATE], span),
         f"{s.evicted_slots:,} states ({show_bytes(s.evicted_slots * s.slot_bytes)})"),
        (Constraint.RUNNING.value, f"{s.max_running_requests:,}", f"{c.peak_running:,}", "",
         _pct(blocked[Constraint.RUNNING], span), ""),
        (Constraint.PREFILL_BUDGET.value + " (compute)", "", "", "",
         _pct(blocked[Constraint.PREFILL_BUDGET], span), ""),
    ])
    host = s.host
    host_rows = ([("host tier", s.host_note)] if host is None else [
        ("write policy", host.policy.value),
        ("capacity", f"{host.capacity_pages:,} pages, {host.capacity_slots:,} state slots "
                     f"({show_bytes(host.capacity_bytes)})"),
        ("peak used", f"{host.peak_pages_used:,} pages, {host.peak_slots_used:,} state slots"),
        ("backup bytes", f"{show_bytes(host.backup_bytes)} ({host.backup_pages:,} pages, "
                         f"{host.backup_slots:,} states)"),
        ("loadback bytes", f"{show_bytes(host.loadback_bytes)} ({host.loadback_pages:,} pages, "
                           f"{host.loadback_slots:,} states)"),
        ("host evicted pages", f"{host.host_evicted_pages:,}"),
        ("prompt tokens made usable by loadbacks (KV pages or a state)",
         f"{host.loadback_hit_tokens:,}")])
    latency = latency_table(s)
    return "\n".join([hits, ledgers, *([latency] if latency else []),
                      table("Host tier (HiCache)", ("", ""), host_rows)])


def workload_table(plan: SglangPlan) -> str | None:
    """The workload check (`--requests`/`--context`), as `kvledger plan` prints it."""
    work = plan.workload
    if work is None:
        return None
    verdict = ("fits" if work.fits
               else f"does NOT fit: {work.first_overflow.ledger} overflows first")
    rows = [(r.ledger, f"{r.need:,}", f"{r.capacity:,}",
             show_bytes(r.need_bytes) if r.need_bytes else "", f"{r.max_requests:,}",
             "yes" if r.fits else "NO") for r in work.rows]
    return table(f"Workload: {work.requests:,} × {work.context_tokens:,} tokens "
                 f"({work.requests_per_rank:,} per rank) — {verdict}",
                 ("ledger", "need", "capacity", "need bytes", "max requests", "fits"), rows,
                 "workload")


def host_tables(plan: SglangPlan) -> list[str]:
    """The host tier's pools and coverage under each view (with --enable-hierarchical-cache)."""
    host = plan.host
    if host is None:
        return []
    views = host.views
    names = dict.fromkeys(row.component for view in reversed(views) for row in view.pools.rows)
    rows: list[tuple[str, ...]] = [
        ("bytes per token", *(f"{v.per_token.total_bytes:,}" for v in views))]
    for name in names:
        cells = []
        for view in views:
            row = next((r for r in view.pools.rows if r.component == name), None)
            cells.append("—" if row is None
                         else f"{row.count:,} × {row.unit_bytes:,} = {row.total_bytes:,}")
        rows.append((name, *cells))
    rows.append(("total host bytes", *(f"{v.pools.total_bytes:,}" for v in views)))
    header = ("host ledger", *(v.rules.name for v in views))
    cover_rows = [(obj.label(plan.layout.kv_row), *(v.coverage[obj].value for v in views))
                  for obj in dict.fromkeys(o for v in reversed(views) for o in v.coverage)]
    return [table("Host tier (HiCache) per rank", header, rows, "host"),
            table("What the host tier covers", ("device object", *header[1:]), cover_rows,
                  "host")]
