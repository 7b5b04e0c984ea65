"""Rich tables for `kvledger sweep`, `compare` and `recommend`, and the sweep's CSV."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from kvledger.core.engines import Engine
from kvledger.report.show import show_size
from kvledger.sizing import Difference, Recommendations, Sweep, SweepRow
from kvledger.sizing.documents import recommendation_json, sweep_row_json
from kvledger.sizing.pd_split import PdSplits

# The table's columns; the rest of each row (nodes, replicas, attn_tp, the state dtype,
# workers, HBM per pool, side buffers, requests per GPU, the request-limit binding) is in
# --json and --csv. Few enough to fit 120 columns without cutting a number.
COLUMNS = ("#", "gpu", "engine", "layout", "kv", "GPUs", "running", "at C", "tokens",
           "HBM pools", "runs out at C", "fits")
NUMBERS = frozenset({"#", "GPUs", "running", "at C", "tokens", "HBM pools"})


def _layout(doc: dict) -> str:
    """tp, then DP attention workers (`dp N`) or copies of the tp group (`×N`: SGLang's
    replicas, vLLM's DP engines), then pipeline stages (`pp N`), decode context parallelism
    (`dcp N`) and a prefill/decode role (`prefill`, `decode`) where set."""
    if doc["tp_size"] is None:
        return "—"
    if doc["enable_dp_attention"]:
        text = f"tp {doc['tp_size']} dp {doc['dp_size']}"
    else:
        text = f"tp {doc['tp_size']}" + (f" ×{doc['replicas']}" if doc["replicas"] > 1 else "")
    for key, word in (("pp_size", "pp"), ("dcp_size", "dcp")):
        if (doc.get(key) or 1) > 1:
            text += f" {word} {doc[key]}"
    if doc.get("disaggregation_mode") not in (None, "null"):
        text += f" {doc['disaggregation_mode']}"
    return text


def _cells(i: int, row: SweepRow, show_context: bool) -> list[str | Text]:
    doc = sweep_row_json(row)
    head = [f"{i}", doc["gpu"] or "—", doc["engine"], _layout(doc),
            doc["kv_cache_dtype"] or "—"]
    if not row.ok:
        return [*head, "", "", "", "", "", Text("not planned", style="red"), ""]
    tot, fit = row.totals, doc["context_fit"]
    fits = "" if row.fits is None else ("yes" if row.fits else Text("NO", style="red"))
    at = f"{fit['requests']:,}" + (f" × {fit['context_tokens']:,}" if show_context else "")
    pools = tot.token_pool_bytes + tot.state_pool_bytes + tot.verify_bytes
    return [*head, f"{tot.ranks:,}", f"{tot.running_requests:,}", at, f"{tot.tokens:,}",
            show_size(pools), fit["binding_label"], fits]


def sweep_table(title: str, rows: Sequence[SweepRow], context_tokens: int | None = None) -> Table:
    """The sweep's rows; numbers never wrap or cut (each numeric column is as wide as its
    widest cell), words wrap. `context_tokens`: the workload's --context, else each engine's
    context length is C."""
    contexts = {sweep_row_json(r)["context_fit"]["context_tokens"] for r in rows if r.ok}
    show_context = context_tokens is None and len(contexts) > 1
    c = (f"{context_tokens:,} tokens (--context)" if context_tokens is not None
         else f"each engine's context length ({', '.join(f'{n:,}' for n in sorted(contexts))} "
              "tokens)" if contexts else "each engine's context length")
    table = Table(title=title, title_justify="left", caption_justify="left", caption=(
        "Totals over the whole deployment. running: requests each engine runs at once, by its "
        "own limit (SGLang: N × workers, of any length; vLLM: DP × min(max_num_seqs, "
        "⌊concurrency at max_model_len⌋)). at C: requests of C tokens held at once, like for "
        f"like across engines, C = {c}; runs out at C: what caps them. HBM pools: token and "
        "state pools over all GPUs. layout: tp, then dp N (DP attention) or ×N (copies of the "
        "tp group: SGLang replicas, vLLM DP engines), then pp N (pipeline stages), dcp N "
        "(decode context parallelism) and the prefill/decode role where set. Rows not planned "
        "say why below; more per row in --json and --csv."))
    cells = [_cells(i, r, show_context) for i, r in enumerate(rows, 1)]
    for j, col in enumerate(COLUMNS):
        if col in NUMBERS:  # never wrapped, never cut: as wide as the widest number
            widest = max((len(str(row[j])) for row in cells), default=0)
            table.add_column(col, justify="right", no_wrap=True, min_width=max(widest, len(col)))
        else:  # words wrap between words; a word is folded only if longer than the column
            word = max((len(w) for row in cells for w in str(row[j]).split()), default=0)
            table.add_column(col, justify="left", overflow="fold", min_width=word)
    for row in cells:
        table.add_row(*row)
    return table


def render_sweep(title: str, sweep: Sweep, console: Console) -> None:
    """The table, then why each row without a plan has none, then every assumption."""
    console.print(sweep_table(title, sweep, sweep.context_tokens))
    for i, row in enumerate(sweep, 1):
        if not row.ok:
            console.print(f"#{i} not planned: {row.error}", style="red", highlight=False)
    for note in sweep.notes:
        console.print(f"note: {note}", style="yellow", highlight=False)


def write_sweep_csv(rows: list[SweepRow], path: Path) -> None:
    """One line per deployment: the JSON row flattened (totals, per-worker and context-fit
    keys prefixed)."""
    docs = [sweep_row_json(r) for r in rows]
    flat = []
    for doc in docs:
        line = {k: "" if v is None else v for k, v in doc.items()
                if k not in ("totals", "per_worker", "context_fit")}
        for group in ("totals", "per_worker", "context_fit"):
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
                 "(smallest capacity ÷ need of the workload check); running requests: the "
                 "engine's own limit; requests of C tokens: held at once, like for like",
                 caption_justify="left")
    words = ("gpu", "engine", "layout", "kv")
    for col in ("#", "gpu", "engine", "GPUs", "layout", "kv", "running requests",
                f"requests of {rec.context_tokens:,}", "tokens", "headroom"):
        fits.add_column(col, justify="left" if col in words else "right",
                        no_wrap=col not in words)
    for i, r in enumerate(rec.fits, 1):
        doc = recommendation_json(r)
        fits.add_row(str(i), doc["gpu"] or "—", doc["engine"], f"{doc['ranks']:,}",
                     _layout(doc), f"{doc['kv_cache_dtype']}",
                     f"{doc['running_requests']:,}", f"{doc['context_fit']['requests']:,}",
                     f"{doc['tokens']:,}", f"×{r.headroom:,.2f}")
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


def render_pd_splits(result: PdSplits, console: Console) -> None:
    """`recommend --pd`: one row per split, each side's best layout, then the answer's
    commands (kvledger.sizing.pd_split)."""
    table = Table(title=f"Prefill/decode splits of {result.nodes} nodes of {result.gpu} for "
                  f"{result.requests:,} requests × {result.context_tokens:,} tokens",
                  title_justify="left", caption_justify="left", caption=(
                      "decode: its servers hold the requests; prefill: one request of C tokens "
                      "on its servers. The answer: the fitting split with the fewest decode "
                      "nodes (the most left to prefill); prompt throughput is not modelled."))
    for col in ("split", "decode layout", f"decode requests of {result.context_tokens:,}",
                "prefill layout", "fits"):
        table.add_column(col, justify="right" if col.startswith("decode requests") else "left")
    best = result.best
    for split in result:
        cells = []
        for side in (split.decode, split.prefill):
            doc = recommendation_json(side.best) if side.best else None
            cells.append(_layout(doc) if doc else Text(side.why or "—", style="red"))
            if side is split.decode:
                cells.append(f"{doc['context_fit']['requests']:,}" if doc else "")
        mark = "yes ◀" if split is best else ("yes" if split.fits else Text("NO", style="red"))
        table.add_row(split.ratio, *cells, mark)
    console.print(table)
    if best is None:
        console.print(Text("no split of these nodes holds the workload", style="red"))
        return
    for label, side in (("decode", best.decode), ("prefill", best.prefill)):
        assert side.best is not None
        console.print(f"{best.ratio} {label}: {side.best.command}", highlight=False,
                      soft_wrap=True)
