"""Rich tables for `kvledger sweep`, `compare` and `recommend`, and the sweep's CSV."""

from __future__ import annotations

import csv
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from kvledger.core.engines import Engine
from kvledger.core.units import fmt_gib
from kvledger.sizing import Difference, Recommendations, SweepRow
from kvledger.sizing.documents import recommendation_json, sweep_row_json

COLUMNS = ("gpu", "nodes", "engine", "tp", "dp", "replicas", "attn_tp", "kv", "state", "GPUs",
           "workers", "running requests", "tokens", "token pools", "state pools", "side buffers",
           "binding", "requests / GPU", "fits")


def _cells(row: SweepRow) -> list[str | Text]:
    doc = sweep_row_json(row)
    head = [doc["gpu"] or "—", f"{doc['nodes']}", doc["engine"], *(
        "—" if doc[k] is None else f"{doc[k]}" for k in ("tp_size", "dp_size", "replicas",
                                                         "attn_tp_size", "kv_cache_dtype",
                                                         "mamba_ssm_dtype"))]
    if not row.ok:
        return [*head, Text(f"not planned: {row.error}", style="red"),
                *[""] * (len(COLUMNS) - len(head) - 1)]
    tot = row.totals
    fits = "" if row.fits is None else ("yes" if row.fits else Text("NO", style="red"))
    return [*head, f"{tot.ranks:,}", f"{tot.workers:,}", f"{tot.running_requests:,}",
            f"{tot.tokens:,}", fmt_gib(tot.token_pool_bytes), fmt_gib(tot.state_pool_bytes),
            fmt_gib(tot.side_bytes), row.binding,
            f"{row.requests_per_gpu:,.2f}", fits]


def sweep_table(title: str, rows: list[SweepRow]) -> Table:
    table = Table(title=title, title_justify="left",
                  caption="totals over the whole deployment: GPUs, attention-DP workers, their "
                          "running requests and tokens, HBM per pool over all GPUs (GiB); vLLM rows: "
                          "its flags, DP engines as workers, the one block pool as token "
                          "pools, running requests = DP × min(max_num_seqs, ⌊concurrency⌋)",
                  caption_justify="left")
    for col in COLUMNS:
        table.add_column(col, justify="left" if col in ("gpu", "engine", "kv", "state",
                                                        "binding")
                         else "right")
    for row in rows:
        table.add_row(*_cells(row))
    return table


def write_sweep_csv(rows: list[SweepRow], path: Path) -> None:
    """One line per deployment: the JSON row flattened (totals and per-worker prefixed)."""
    docs = [sweep_row_json(r) for r in rows]
    flat = []
    for doc in docs:
        line = {k: "" if v is None else v for k, v in doc.items()
                if k not in ("totals", "per_worker")}
        for group in ("totals", "per_worker"):
            for key, value in (doc[group] or {}).items():
                line[f"{group}.{key}"] = value
        flat.append(line)
    names = list(dict.fromkeys(k for line in flat for k in line))
    with Path(path).open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=names)
        writer.writeheader()
        writer.writerows(flat)


def _show(value: object) -> str:
    if isinstance(value, bool) or value is None:
        return {True: "yes", False: "no", None: "—"}[value]
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def compare_table(diffs: list[Difference], a_title: str, b_title: str) -> Table:
    table = Table(title="Two deployments side by side (≠ marks a difference)",
                  title_justify="left")
    table.add_column("quantity")
    table.add_column(a_title, justify="right")
    table.add_column(b_title, justify="right")
    table.add_column("", justify="center")
    for d in diffs:
        style = "bold" if d.differs else None
        table.add_row(Text(d.label, style=style), _show(d.a), _show(d.b),
                      Text("≠", style="yellow") if d.differs else "")
    return table


def render_recommendations(rec: Recommendations, console: Console) -> None:
    fits = Table(title=f"Cheapest layouts for {rec.requests:,} requests × "
                       f"{rec.context_tokens:,} tokens ({rec.searched:,} layouts planned)",
                 title_justify="left", caption="fewest GPUs first, then most headroom "
                 "(smallest capacity ÷ need of the workload check)", caption_justify="left")
    for col in ("#", "gpu", "engine", "GPUs", "tp", "dp", "kv", "running requests", "tokens",
                "headroom"):
        fits.add_column(col, justify="left" if col in ("gpu", "engine", "kv") else "right")
    for i, r in enumerate(rec.fits, 1):
        doc = recommendation_json(r)
        fits.add_row(str(i), doc["gpu"] or "—", doc["engine"], f"{doc['ranks']:,}",
                     f"{doc['tp_size']}", f"{doc['dp_size']}", f"{doc['kv_cache_dtype']}",
                     f"{doc['running_requests']:,}", f"{doc['tokens']:,}",
                     f"×{r.headroom:,.2f}")
    console.print(fits if rec.fits else Text("no layout in the search space fits", style="red"))
    for i, r in enumerate(rec.fits, 1):
        own = f"{Engine(r.engine).display}:"
        console.print(f"#{i} {own:<8}{r.command}", highlight=False, soft_wrap=True)
        if r.vllm_command == r.command:  # a vLLM fit: its command is vLLM's already
            continue
        if r.vllm_command:
            console.print(f"#{i} vLLM:   {r.vllm_command}", highlight=False, soft_wrap=True)
        else:
            console.print(f"#{i} vLLM:   does not fit: {r.vllm_why}", highlight=False,
                          soft_wrap=True, style="yellow")
    why = Table(title="Why the other layouts do not fit", title_justify="left")
    why.add_column("reason")
    why.add_column("layouts", justify="right")
    for reason, n in rec.failures:
        why.add_row(reason, f"{n:,}")
    console.print(why)
