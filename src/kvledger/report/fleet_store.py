"""`simulate --replicas R --l3-size C --l3-shared`: the fleet's reuse with one shared store
tier, with R private tiers of C / R, and without (`sim.fleet.store_reuse`).

JSON: `store_reuse` in `kvledger.simulate-fleet/1` (the fleet's own figures are the shared
run's), a list of {store, token_hit, usable_hit, restored_tokens, ttft_p95_ms (null: nothing
finished), saturated}.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from kvledger.sim.fleet.store_reuse import ReuseRow


def reuse_json(rows: Sequence[ReuseRow]) -> list[dict[str, Any]]:
    return [{"store": r.label, "token_hit": round(r.token_hit_rate, 6),
             "usable_hit": round(r.usable_hit_rate, 6), "restored_tokens": r.restored_tokens,
             "ttft_p95_ms": None if r.ttft_p95_ms is None else round(r.ttft_p95_ms, 3),
             "saturated": r.saturated} for r in rows]


def render_reuse(rows: list[dict[str, Any]], console: Console) -> None:
    table = Table(title="Fleet reuse by store tier (same total store capacity)",
                  title_justify="left")
    for col in ("store", "token hit", "usable hit", "restored tokens", "TTFT p95 ms"):
        table.add_column(col, justify="left" if col == "store" else "right")
    for r in rows:
        ttft = "–" if r["ttft_p95_ms"] is None else f"{r['ttft_p95_ms']:,.0f}"
        if r["saturated"]:
            ttft += " (saturated)"
        table.add_row(r["store"], f"{r['token_hit']:.1%}", f"{r['usable_hit']:.1%}",
                      f"{r['restored_tokens']:,}", ttft)
    console.print(table)
