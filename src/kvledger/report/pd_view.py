"""Tables of `kvledger simulate --prefill-replicas P --decode-replicas D`: both fleets side by
side, then where disaggregation pays (from `pd_json`'s document: one source of numbers)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table


def render_pd(doc: dict[str, Any], console: Console) -> None:
    link, t = doc["link"], doc["transfer"]
    sides = Table(title=f"{doc['workload']}: disaggregated against aggregated on the same GPUs "
                  f"(router {doc['router']})", title_justify="left")
    for col in ("fleet", "GPUs", "finished", "token hit", "usable hit", "TTFT p50 ms",
                "TTFT p95 ms", "TPOT p50 ms", "TPOT p95 ms", "out tok/s"):
        sides.add_column(col, justify="left" if col == "fleet" else "right")
    for key in ("disaggregated", "aggregated"):
        s, lat = doc[key], doc[key]["latency"]
        cells = (["–"] * 5 if lat is None else [
            f"{lat['ttft_ms']['p50']:,.0f}", f"{lat['ttft_ms']['p95']:,.0f}",
            f"{lat['tpot_ms']['p50']:,.2f}", f"{lat['tpot_ms']['p95']:,.2f}",
            f"{lat['output_tokens_per_s']:,.0f}"])
        name = s["replicas"] + (" (SATURATED)" if s["saturated"] else "")
        sides.add_row(name, f"{s['gpus']:,}", f"{s['finished']:,}",
                      f"{s['rates']['token_hit']:.1%}", f"{s['rates']['usable_hit']:.1%}",
                      *cells, style="red" if s["saturated"] else None)
    console.print(sides)
    console.print(f"link {link['kind']}: {link['bytes_per_s'] / 1e9:g} GB/s per GPU one way, "
                  f"{link['latency_ms'] * 1e3:g} µs ({link['source']}); KV + state moved "
                  f"{t['bytes'] / 1e9:,.1f} GB, per request p50 "
                  f"{t['per_request_ms']['p50']:,.2f} ms, p95 {t['per_request_ms']['p95']:,.2f} "
                  "ms", highlight=False)
    verdict = Table(title="Where disaggregation pays", title_justify="left")
    for col in ("metric", "disaggregated", "aggregated", "change", "PD"):
        verdict.add_column(col, justify="left" if col in ("metric", "PD") else "right")
    for v in doc["verdict"]:
        change = "–" if v["change"] is None else f"{v['change']:+.1%}"
        verdict.add_row(v["metric"], f"{v['disaggregated']:,.2f}", f"{v['aggregated']:,.2f}",
                        change, v["pd"], style={"pays": "green", "costs": "red"}.get(v["pd"]))
    console.print(verdict)
