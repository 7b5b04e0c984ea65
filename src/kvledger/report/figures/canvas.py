"""Figure plumbing shared by every figure: the palette, a blank figure, saving to SVG and PNG.

Figures are built on `matplotlib.figure.Figure` directly (no pyplot, so no global backend
state and nothing opens a window); saving picks the Agg or SVG canvas from the suffix.
SVG text stays text (`svg.fonttype none`) so a report can be searched and diffed.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib as mpl
from matplotlib.axis import Axis
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator

if TYPE_CHECKING:
    from kvledger.sglang.plan import SglangPlan

# One colour per thing the article distinguishes, used the same way in every figure.
PALETTE = {
    "kv": "#3b6fb6",  # token KV (latent rows, K+V)
    "indexer": "#e3a33b",  # DSA index keys
    "indexer_written": "#b8791a",
    "state": "#4f9a5a",  # linear-attention state (conv + temporal)
    "conv": "#8cc496",
    "tail": "#b05a8a",  # compress tail (per-request buffer)
    "side": "#9a9a9a",  # other unbudgeted buffers
    "free": "#e8e8e8",
    "cache_unlocked": "#a9c4e6",
    "blocked": "#d9534f",
    "ok": "#4f9a5a",
    "bad": "#d9534f",
    "warn": "#e3a33b",
    "muted": "#6b6b6b",
}

mpl.rcParams.update({
    "svg.fonttype": "none",
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
})


def deployment_line(plan: SglangPlan) -> str:
    """Model, rule set, deployment, GPU and memory in one line: every figure carries it."""
    lay, dep = plan.layout, plan.layout.deployment
    memory = plan.capacity.memory.source  # names the GPU when there is one
    gpu = "" if plan.gpu else "no GPU named, "
    return (f"{plan.model.name} · {lay.rules.name} · tp {dep.tp_size}, dp {dep.dp_size}, "
            f"attn_tp {dep.attn_tp_size}, KV {dep.kv_cache_dtype.value}, page {lay.page_tokens}"
            f" · {gpu}{memory}")


def stamp(fig: Figure, plan: SglangPlan) -> Figure:
    """Add the deployment line to the figure's title (above any title it has)."""
    own = fig.get_suptitle()
    line = deployment_line(plan)
    title = f"{own}\n{line}" if own else line
    size = 10.0 if own else 8.0
    # a narrow figure: a smaller title rather than one cut at both edges (down to 6 points)
    while size > 6 and not fits_width(title, fig.get_figwidth() - 0.3, size):
        size -= 0.5
    fig.suptitle(title, fontsize=size)
    return fig


def count_axis(axis: Axis, nbins: int = 4) -> None:
    """At most `nbins` + 1 ticks on a byte or token axis, with thousands separators: five-
    and six-digit tick labels at matplotlib's default density run into each other."""
    axis.set_major_locator(MaxNLocator(nbins=nbins, integer=True, min_n_ticks=2))
    axis.set_major_formatter(FuncFormatter(lambda value, _pos: f"{value:,.0f}"))


def fits_width(text: str, width_in: float, fontsize: float) -> bool:
    """Whether `text` (its longest line) fits `width_in` inches at `fontsize` points.

    A DejaVu Sans glyph averages under 0.6 em; 0.62 em per character errs on the wide side,
    so a label judged to fit never spills out of its box.
    """
    longest = max((len(line) for line in text.splitlines()), default=0)
    return longest * fontsize * 0.62 / 72 <= width_in


def new_figure(width_in: float, height_in: float) -> Figure:
    return Figure(figsize=(width_in, height_in), layout="constrained")


def save_figure(fig: Figure, out_dir: Path, stem: str) -> tuple[Path, Path]:
    """Write `stem.svg` and `stem.png` into `out_dir`; return both paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    svg, png = out_dir / f"{stem}.svg", out_dir / f"{stem}.png"
    fig.savefig(svg, format="svg")
    fig.savefig(png, format="png", dpi=150)
    return svg, png


def svg_text(fig: Figure) -> str:
    """The figure as an inline SVG element (for a self-contained HTML page)."""
    from io import StringIO

    buffer = StringIO()
    fig.savefig(buffer, format="svg")
    text = buffer.getvalue()
    return text[text.index("<svg"):]


def gib(n: int) -> str:
    return f"{n / 2**30:,.2f} GiB"
