"""Tables of `kvledger simulate --replicas R`: one row per replica, then the fleet's, and
the overload verdict. A saturated run's latency columns are headed as such."""

from __future__ import annotations

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from kvledger.sim.fleet.summary import FleetSummary, LoadVerdict
from kvledger.sim.latency import LatencyStats


def _cells(lat: LatencyStats | None) -> list[str]:
    if lat is None:
        return ["–"] * 5
    return [f"{lat.ttft_ms.p50:,.0f}", f"{lat.ttft_ms.p95:,.0f}", f"{lat.tpot_ms.p50:,.1f}",
            f"{lat.tpot_ms.p95:,.1f}", f"{lat.output_tokens_per_s:,.0f}"]


def overload_lines(v: FleetSummary | LoadVerdict) -> list[Text]:
    """The offered load against what the replicas serve, and SATURATED when it is."""
    o = v.overload
    if v.offered_prefill_tokens_per_s is None:
        offered = "offered load: every request arrives at once (no rate to size for)"
    else:
        offered = (f"offered load (after cache hits): {v.offered_prefill_tokens_per_s:,.0f} "
                   f"prefill + {v.offered_decode_tokens_per_s:,.0f} decode tokens/s; one "
                   f"replica serves {v.rates.prefill_tokens_per_s:,.0f} prefill or "
                   f"{v.rates.decode_tokens_per_s:,.0f} decode tokens/s: "
                   f"{o.busy_replicas:.2f} replicas busy")
    lines = [Text(offered)]
    if o.saturated:
        why = "the queue only grows" if o.queue_grows else "the load exceeds the replicas"
        need = f"; about {o.replicas_needed} replicas would hold it" if o.replicas_needed else ""
        lines.append(Text(f"SATURATED: {why}{need}. Latency figures grow with the trace's "
                          "length, not a steady state.", style="bold red"))
    return lines


def render_fleet(f: FleetSummary, console: Console) -> None:
    o = f.overload
    tag = " (saturated)" if o.saturated else ""
    table = Table(title=f"{len(f.replicas)} replicas, router {f.router}")
    for head in ("replica", "requests", "token hit", "usable hit", f"TTFT p50 ms{tag}",
                 f"TTFT p95 ms{tag}", f"TPOT p50 ms{tag}", f"TPOT p95 ms{tag}", "out tok/s"):
        table.add_column(head, justify="right")
    for i, s in enumerate(f.replicas):
        c = s.counters
        table.add_row(str(i), f"{s.num_requests:,}", f"{c.token_hit_rate:.1%}",
                      f"{c.usable_hit_rate:.1%}", *_cells(s.latency))
    table.add_row("fleet", f"{f.requests:,}", f"{f.token_hit_rate:.1%}",
                  f"{f.usable_hit_rate:.1%}", *_cells(f.latency), style="bold")
    parts: list = [table, Text(f"load imbalance (busiest replica's computed tokens / mean): "
                               f"{f.load_imbalance:.2f}")]
    parts += overload_lines(f)
    parts.append(Text(f"step time: {f.timing}; replay took {f.wall_s:.1f} s", style="bold"))
    console.print(Group(*parts))
