"""Rich rendering of a simulation summary: hits, each ledger's use and blocking, evictions."""

from __future__ import annotations

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from kvledger.cache.host_stats import HostStats
from kvledger.report import hit_rates
from kvledger.report.show import show_bytes, show_ms, show_share, show_size
from kvledger.sim.l3 import StoreSummary
from kvledger.sim.metrics import SimSummary
from kvledger.sim.series import Constraint

_pct = show_share


def hits_table(s: SimSummary) -> Table:
    c = s.counters
    table = Table(title="Prefix cache", title_justify="left")
    table.add_column("tokens")
    table.add_column("count", justify="right")
    table.add_column("of prompt", justify="right")
    table.add_row("prompt tokens (admitted requests)", f"{c.prompt_tokens:,}", "100 %")
    table.add_row("KV hit (token hit rate)", f"{c.hit_tokens:,}", _pct(c.hit_tokens, c.prompt_tokens))
    table.add_row("usable hit: KV with a state (usable hit rate)", f"{c.usable_hit_tokens:,}",
                  _pct(c.usable_hit_tokens, c.prompt_tokens))
    table.add_row("recomputed: state checkpoint shallower than the KV", f"{c.recomputed_tokens:,}",
                  _pct(c.recomputed_tokens, c.prompt_tokens))
    table.add_row("prefill computed", f"{c.prefill_tokens:,}", _pct(c.prefill_tokens, c.prompt_tokens))
    table.add_row("decoded", f"{c.decode_tokens:,}", "")
    table.add_row("state checkpoints saved / already cached / skipped (no slot) / declined "
                  f"({s.policies})",
                  f"{c.checkpoints_saved:,} / {c.checkpoints_existing:,} / "
                  f"{c.checkpoints_skipped:,} / {c.checkpoints_declined:,}", "")
    return table


def ledgers_table(s: SimSummary) -> Table:
    c, span = s.counters, s.duration_ms
    page_bytes = s.page_tokens * s.token_bytes
    table = Table(title=f"Ledgers on one rank (page = {s.page_tokens} tokens)",
                  title_justify="left",
                  caption="used: not free (requests + cache); pinned: what eviction cannot take; "
                          "blocked: time the head of the queue waited on it",
                  caption_justify="left")
    for col in ("ledger", "capacity", "peak used", "peak pinned", "blocked", "evicted"):
        table.add_column(col, justify="left" if col == "ledger" else "right")
    blocked = c.blocked_ms

    def waited(constraint: Constraint) -> str:
        return f"{show_ms(blocked[constraint])}\n{_pct(blocked[constraint], span)}"

    table.add_row(
        Constraint.TOKENS.value, f"{s.token_pages:,} pages\n{show_size(s.token_pages * page_bytes)}",
        f"{c.peak_pages_used:,}\n{_pct(c.peak_pages_used, s.token_pages)}",
        f"{c.peak_pages_pinned:,}\n{_pct(c.peak_pages_pinned, s.token_pages)}",
        waited(Constraint.TOKENS),
        f"{s.evicted_pages:,} pages\n{show_size(s.evicted_pages * page_bytes)}",
    )
    table.add_row(
        Constraint.STATE.value, f"{s.state_slots:,} slots\n{show_size(s.state_slots * s.slot_bytes)}",
        f"{c.peak_slots_used:,}\n{_pct(c.peak_slots_used, s.state_slots)}",
        f"{c.peak_slots_pinned:,}\n{_pct(c.peak_slots_pinned, s.state_slots)}",
        waited(Constraint.STATE),
        f"{s.evicted_slots:,} states\n{show_size(s.evicted_slots * s.slot_bytes)}",
    )
    table.add_row(Constraint.RUNNING.value, f"{s.max_running_requests:,}", f"{c.peak_running:,}",
                  "", waited(Constraint.RUNNING), "")
    table.add_row(Text(f"{Constraint.PREFILL_BUDGET.value} (compute)", style="dim"), "", "", "",
                  waited(Constraint.PREFILL_BUDGET), "")
    return table


def host_table(s: SimSummary, h: HostStats) -> Table:
    table = Table(title=f"Host tier (HiCache, {h.policy.value}; page = {s.page_tokens} tokens of "
                        f"KV rows and index keys, {show_bytes(h.page_bytes)})",
                  title_justify="left", caption=s.host_note, caption_justify="left")
    for col in ("", "pages", "state slots", "bytes"):
        table.add_column(col, justify="left" if not col else "right")

    def row(label: str, pages: int, slots: int) -> None:
        table.add_row(label, f"{pages:,}", f"{slots:,}",
                      show_bytes(pages * h.page_bytes + slots * h.slot_bytes))

    row("capacity", h.capacity_pages, h.capacity_slots)
    row("peak used", h.peak_pages_used, h.peak_slots_used)
    row("backed up (device → host)", h.backup_pages, h.backup_slots)
    row("loaded back (host → device)", h.loadback_pages, h.loadback_slots)
    row("evicted from host", h.host_evicted_pages, h.host_evicted_slots)
    # Counts hits a loadback made usable: KV pages loaded back, or device KV given a state
    # loaded back, so it can be non-zero while no page was loaded back.
    table.add_row("prompt tokens made usable by loadbacks (KV pages or a state)",
                  f"{h.loadback_hit_tokens:,} tokens", "",
                  _pct(h.loadback_hit_tokens, s.counters.prompt_tokens) + " of prompt")
    return table


def store_table(s: SimSummary, st: StoreSummary) -> Table:
    table = Table(title=f"Store tier (L3, {st.backend.value}, accounting mode: objects and "
                        "bytes as the backend lays them out; time = latency + bytes / bandwidth)",
                  title_justify="left")
    for col in ("", "groups", "objects", "bytes", "time"):
        table.add_column(col, justify="left" if not col else "right")
    table.add_row("capacity", "", "", show_bytes(st.capacity_bytes), "")
    table.add_row("held at the end", f"{st.groups:,}", f"{st.objects:,}",
                  show_bytes(st.used_bytes), "")
    table.add_row("written (write-through, queued)", f"{st.put_groups:,}", "",
                  show_bytes(st.put_bytes), show_ms(st.put_ms))
    table.add_row("evicted / refused (larger than the store)",
                  f"{st.evicted_groups:,} / {st.refused_groups:,}", "", "", "")
    table.add_row(f"restored into {st.restores:,} requests (waited)",
                  f"{st.restored_tokens:,} tokens", _pct(st.restored_tokens,
                                                         s.counters.prompt_tokens) + " of prompt",
                  show_bytes(st.get_bytes), show_ms(st.get_ms))
    return table


def latency_table(s: SimSummary) -> Table:
    lat = s.latency
    table = Table(title=f"Latency ({s.timing})", title_justify="left")
    for name in ("", "mean", "p50", "p95", "p99"):
        table.add_column(name, justify="left" if not name else "right")
    for label, p in (("TTFT", lat.ttft_ms), ("TPOT", lat.tpot_ms)):
        table.add_row(label, *(show_ms(v) for v in (p.mean, p.p50, p.p95, p.p99)))
    table.caption = (f"throughput {lat.output_tokens_per_s:,.0f} output tok/s, "
                     f"{lat.total_tokens_per_s:,.0f} total tok/s; "
                     f"{s.counters.recomputed_tokens:,} cached tokens recomputed")
    return table


def render_sim(s: SimSummary, console: Console) -> None:
    c = s.counters
    head = (f"[bold]{s.workload}[/]: {s.num_requests:,} requests, {c.finished:,} finished, "
            f"{len(s.unfinished):,} unfinished; simulated {show_ms(s.duration_ms)} in "
            f"{c.steps:,} steps; mean queueing {show_ms(c.queue_ms / max(c.admitted, 1))}")
    parts: list = [head, hits_table(s), ledgers_table(s)]
    if s.latency is not None:
        parts.append(latency_table(s))
    if s.host is None:
        parts.append(Text(f"host tier (backup / loadback bytes): {s.host_note}", style="yellow"))
    else:
        parts.append(host_table(s, s.host))
    if s.store is not None:
        parts.append(store_table(s, s.store))
    for u in s.unfinished[:10]:
        parts.append(Text(f"unfinished: request {u.rid}: {u.reason}", style="red"))
    if len(s.unfinished) > 10:
        parts.append(Text(f"… and {len(s.unfinished) - 10:,} more unfinished", style="red"))
    for note in (*s.notes, hit_rates.SIMULATE):
        parts.append(Text(f"note: {note}", style="yellow"))
    binding = s.binding
    verdict = (f"binding ledger: {binding.value}" if binding
               else "no ledger kept a request waiting")
    compute_ms = c.blocked_ms[Constraint.PREFILL_BUDGET]
    if compute_ms > max((c.blocked_ms[k] for k in Constraint if k.is_ledger), default=0):
        verdict += " (compute, the prefill budget, kept the queue waiting longer)"
    parts.append(Text(f"{verdict}; replay took {show_ms(s.wall_s * 1000)}", style="bold"))
    console.print(Group(*parts))
