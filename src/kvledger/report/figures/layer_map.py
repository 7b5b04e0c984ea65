"""Figure 1 of the article: which layers keep token KV and which keep request state.

Two rows over the decoder layers: a full-attention layer leaves one row per token (top), a
linear-attention layer keeps one state per request and nothing per token (bottom). Indexer
layers are marked. The per-layer bytes come from the plan's specs, so any model works.
"""

from __future__ import annotations

import matplotlib as mpl
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from kvledger.model.arch import LayerKind
from kvledger.report.figures.canvas import PALETTE, fits_width, new_figure
from kvledger.sglang.plan import SglangPlan


def layer_map(plan: SglangPlan) -> Figure:
    lay, model = plan.layout, plan.model
    n = model.num_layers
    fig = new_figure(max(6.0, min(14.0, 0.2 * n + 2)), 2.6)
    ax = fig.add_subplot()
    rows = {LayerKind.FULL: 1, LayerKind.LINEAR: 0}
    for layer in model.layers:
        y = rows[layer.kind]
        colour = PALETTE["kv"] if layer.kind is LayerKind.FULL else PALETTE["state"]
        ax.add_patch(Rectangle((layer.index, y + 0.1), 0.9, 0.8, color=colour))
        if layer.has_indexer:
            ax.add_patch(Rectangle((layer.index, y + 0.1), 0.9, 0.25, color=PALETTE["indexer"]))
    state_bytes = lay.state.bytes_per_layer if lay.state else 0
    index_bytes = lay.index_key.reserved_bytes if lay.index_key else 0
    top = f"token KV: {lay.kv_row.row_bytes} B/token per layer"
    if index_bytes:
        top += f" (+ {index_bytes} B index key where marked)"
    ax.set_yticks([0.5, 1.5], [f"request state\n{model.num_linear_layers} layers",
                               f"token KV\n{model.num_full_layers} layers"])
    ax.set_xlim(0, n)
    ax.set_ylim(0, 2)
    step = 1 if n <= 24 else 4
    ax.set_xticks([i + 0.45 for i in range(0, n, step)], [str(i) for i in range(0, n, step)])
    ax.set_xlabel("decoder layer (0-based, as SGLang numbers them)")
    ax.text(0, 2.02, top, fontsize=8, va="bottom", color=PALETTE["kv"])
    if state_bytes:
        ax.text(n, 2.02, f"state: {state_bytes:,} B/slot per layer", fontsize=8, va="bottom",
                ha="right", color=PALETTE["state"])
    title = (f"{model.name}: {model.num_full_layers} {model.attn.value.upper()} layers keep "
             f"token KV, {model.num_linear_layers} linear layers keep request state")
    width_in = fig.get_figwidth() - 0.4  # the axes' side margins
    if not fits_width(title, width_in, mpl.rcParams["axes.titlesize"]):
        title = title.replace(": ", ":\n", 1)  # a narrow figure (few layers): two lines
    ax.set_title(title, pad=16)
    ax.spines["left"].set_visible(False)
    return fig
