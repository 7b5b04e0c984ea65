"""The sweep figure: deployment-wide tokens and running requests, one bar pair per row."""

from __future__ import annotations

from matplotlib.figure import Figure

from kvledger.report.figures.canvas import PALETTE, new_figure
from kvledger.sizing import SweepRow


def _label(row: SweepRow) -> str:
    f = row.plan.layout_fields()
    engine = "" if row.engine == "sglang" else f"{row.engine} "  # SGLang, the default, unnamed
    return (f"{row.gpu or 'no GPU'} ×{row.totals.ranks} {engine}tp {f['tp_size']} "
            f"dp {f['dp_size']} {f['kv_cache_dtype']}")


def sweep_figure(model: str, rows: list[SweepRow], memory: str) -> Figure:
    """Bars for every planned row; the title names the model and how memory was given."""
    planned = [r for r in rows if r.ok]
    fig = new_figure(10.0, 0.35 * max(len(planned), 1) + 1.8)
    tokens, running = fig.subplots(1, 2, sharey=True)
    labels = [_label(r) for r in planned]
    ys = range(len(planned))
    tokens.barh(ys, [r.totals.tokens for r in planned], color=PALETTE["kv"])
    running.barh(ys, [r.totals.running_requests for r in planned], color=PALETTE["state"])
    for r, y in zip(planned, ys, strict=True):
        tokens.text(r.totals.tokens, y, f" {r.totals.tokens:,}", va="center", fontsize=7)
        running.text(r.totals.running_requests, y,
                     f" {r.totals.running_requests:,} ({r.binding})",
                     va="center", fontsize=7)
    tokens.set_yticks(list(ys), labels, fontsize=7)
    tokens.invert_yaxis()
    tokens.set_xlabel("KV tokens, whole deployment")
    running.set_xlabel("running requests, whole deployment (binding limit)")
    for ax in (tokens, running):
        ax.set_xlim(0, max((b.get_width() for b in ax.patches), default=1) * 1.5)
    fig.suptitle(f"{model}: deployment sweep — {memory}", fontsize=10)
    return fig
