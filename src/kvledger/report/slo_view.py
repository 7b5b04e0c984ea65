"""The `kvledger recommend --trace … --ttft-p95-ms X` tables: the chosen fleet with its launch
commands, then every rejected option with why it fails (from `slo_json`'s document, so the
table and the JSON say the same)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table


def _fleet(f: dict[str, Any]) -> str:
    host = " + host tier" if f["host_tier"] else ""
    if f["prefill_replicas"] is not None:
        return (f"{f['prefill_replicas']} prefill + {f['decode_replicas']} decode × "
                f"{f['gpu']} tp {f['tp']}, {f['router']}")
    router = "" if f["replicas"] == 1 else f", {f['router']}"
    return f"{f['replicas']} × {f['gpu']} tp {f['tp']}{host}{router}"


def _size(f: dict[str, Any]) -> str:
    cost = f["cost_usd_per_hour"]
    return f"{f['gpus']:,}" + ("" if cost is None else f" (${cost:,.2f}/h)")


def _ms(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def render_slo(doc: dict[str, Any], console: Console) -> None:
    slo = doc["slo"]
    target = f"TTFT p95 ≤ {slo['ttft_p95_ms']:g} ms" + (
        "" if slo["tpot_p95_ms"] is None else f", TPOT p95 ≤ {slo['tpot_p95_ms']:g} ms")
    s = doc["searched"]
    console.print(f"{doc['workload']}: {doc['requests']:,} requests, {target}; smallest by "
                  f"{doc['objective']}; {s['layouts']:,} layouts, {s['replayed']:,} fleets "
                  f"replayed, {s['ruled_out']:,} ruled out, {s['not_needed']:,} larger not "
                  "needed", highlight=False)
    best = doc["best"]
    table = Table(title_justify="left", caption_justify="left",
                  title="Chosen fleet" if best else "No fleet searched meets the SLO")
    for col in ("fleet", "GPUs", "TTFT p95 ms", "TPOT p95 ms", "token hit", "usable hit",
                "busy replicas", "result"):
        table.add_column(col, justify="left" if col in ("fleet", "result") else "right")
    rows = ([(best, "meets (chosen)")] if best else []) + [
        (f, "meets") for f in doc["also_meets"]] + [
        (f, "; ".join(f["why"])) for f in doc["rejected"]]
    for f, result in rows:
        m = f["measured"]
        table.add_row(_fleet(f), _size(f), _ms(m and m["ttft_p95_ms"]),
                      _ms(m and m["tpot_p95_ms"], 2),
                      "—" if m is None else f"{m['token_hit']:.1%}",
                      "—" if m is None else f"{m['usable_hit']:.1%}",
                      "—" if m is None or m["busy_replicas"] is None
                      else f"{m['busy_replicas']:.2f}", result,
                      style="bold green" if f is best else None)
    console.print(table)
    for r in doc["refused_layouts"]:
        host = " + host tier" if r["host_tier"] else ""
        console.print(f"refused: {r['gpu']} tp {r['tp']}{host}: {r['why']}", highlight=False,
                      style="yellow")
    if best is None:
        return
    cmds = best["commands"]
    console.print("launch:", style="bold")
    for line in cmds["replicas"]:
        console.print(f"  {line}", highlight=False, soft_wrap=True)
    if cmds["router"]:
        console.print(f"  router: {cmds['router']}", highlight=False, soft_wrap=True)
    console.print(f"  router note: {cmds['router_note']}", highlight=False, soft_wrap=True)
    console.print(f"confirm: {cmds['simulate']}", highlight=False, soft_wrap=True)
