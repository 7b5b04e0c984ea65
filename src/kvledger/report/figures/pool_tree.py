"""Figure 3 of the article: the HBM pool hierarchy of one rank, drawn to scale.

    rest for the cache
    └ HybridLinearKVPool
      ├ full_kv_pool:  kv_buffer per full layer, IndexKeyCache per indexer layer
      └ mamba_pool:    conv and temporal state per linear layer (K + 1 slots)
    (+ what flooring leaves unused; compress tail and req_to_token come from the slack)

Widths are proportional to bytes, from the capacity plan; tensor shapes include the padding
row/page/slot SGLang adds (T + P rows, T/P + 1 pages, K + 1 slots).
"""

from __future__ import annotations

from typing import NamedTuple

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from kvledger.report.figures.canvas import PALETTE, fits_width, gib, new_figure
from kvledger.report.show import show_bytes, show_size
from kvledger.sglang.draftlayers import allocated_draft_layers
from kvledger.sglang.plan import SglangPlan
from kvledger.sglang.specs import GqaRowSpec


class Box(NamedTuple):
    label: str
    detail: str
    nbytes: int
    colour: str


def _levels(plan: SglangPlan) -> tuple[list[Box], list[list[Box]]]:
    lay, cap, model = plan.layout, plan.capacity, plan.model
    rows = cap.max_total_tokens + lay.page_tokens
    kv_name = "k_buffer + v_buffer" if isinstance(lay.kv_row, GqaRowSpec) else "kv_buffer"
    draft_layers = allocated_draft_layers(model, lay.deployment) if plan.ledgers.draft_token else 0
    full_layers = model.num_full_layers + draft_layers
    full = [Box(kv_name, f"({rows:,}, {lay.kv_row.row_bytes}) B × {full_layers}",
                rows * lay.kv_row.row_bytes * full_layers, PALETTE["kv"])]
    if key := lay.index_key:
        pages = cap.max_total_tokens // lay.page_tokens + 1
        index_layers = model.num_indexer_layers + draft_layers
        full.append(Box("IndexKeyCache", f"({pages:,}, {key.page_bytes:,}) B × {index_layers}",
                        rows * key.reserved_bytes * index_layers, PALETTE["indexer"]))
    top = [Box("full_kv_pool", f"{cap.max_total_tokens:,} tokens + {lay.page_tokens} padding",
               cap.token_pool_bytes, PALETTE["kv"])]
    below = [full]
    if st := lay.state:
        slots = cap.state_slots + 1
        layers = model.num_linear_layers
        ssm = lay.deployment.mamba_ssm_dtype
        dims = ", ".join(f"{d:,}" for d in st.temporal_shape)
        top.append(Box("mamba_pool", f"{cap.state_slots:,} slots + 1 padding", cap.state_pool_bytes,
                       PALETTE["state"]))
        below.append([
            Box("conv", f"({slots}, {st.conv_shape[0]}, {st.conv_shape[1]:,}) bf16 × {layers}",
                slots * st.conv_bytes * layers, PALETTE["conv"]),
            Box("temporal", f"({slots}, {dims}) {ssm.value if ssm else ''} × {layers}",
                slots * st.temporal_bytes * layers, PALETTE["state"]),
        ])
    top.append(Box("unused", "flooring to pages and slots", cap.unused_bytes, PALETTE["free"]))
    below.append([])
    return top, below


LABEL_PT = 7
IN_PER_UNIT = 0.73  # inches per data unit: a level is 0.8 units, a note line NOTE_UNITS
NOTE_UNITS = 0.2  # one 7-point line (8.4 pt with its leading) and a little air
BOX_HEIGHT_IN = 0.8 * IN_PER_UNIT - 0.04


SMALL_PT = 6


def _split(name: str) -> str:
    """`IndexKeyCache` → `IndexKey` / `Cache`, `k_buffer + v_buffer` → two lines."""
    if " + " in name:
        return name.replace(" + ", " +\n")
    cut = max((i for i, ch in enumerate(name) if ch.isupper() and i), default=0)
    return f"{name[:cut]}\n{name[cut:]}" if cut else name


def _label(box: Box, width_in: float) -> tuple[str, int, int] | None:
    """The richest label that fits the box (text, rotation, points), or None: the note
    below the figure says it all.

    Full (name, size, shape), then name and size, then the name, then the name on two
    smaller lines, then turned upright in a sliver; a label never leaves its box, so none is
    cut by a neighbour or the box's edge.
    """
    room = width_in - 0.06
    for text in (f"{box.label}\n{gib(box.nbytes)}\n{box.detail}", f"{box.label}\n{gib(box.nbytes)}",
                 box.label):
        if fits_width(text, room, LABEL_PT):
            return text, 0, LABEL_PT
    if fits_width(_split(box.label), room, SMALL_PT):
        return _split(box.label), 0, SMALL_PT
    if fits_width(box.label, BOX_HEIGHT_IN, SMALL_PT) and width_in >= 0.16:
        return box.label, 90, SMALL_PT
    return None


def _draw(ax: Axes, boxes: list[Box], x0: float, width: float, y: float, total: int,
          notes: list[str], axes_width_in: float) -> list[tuple[float, float]]:
    spans = []
    x = x0
    for box in boxes:
        w = width * box.nbytes / total if total else 0
        ax.add_patch(Rectangle((x, y), w, 0.8, facecolor=box.colour, edgecolor="white", lw=1.5))
        ink = "black" if box.colour == PALETTE["free"] else "white"
        label = _label(box, w * axes_width_in) if box.nbytes else None
        if label is not None:
            text, rotation, points = label
            ax.text(x + w / 2, y + 0.4, text, ha="center", va="center", fontsize=points,
                    color=ink, rotation=rotation)
        if box.nbytes and (label is None or label[0].count("\n") < 2):
            notes.append(f"{box.label}: {show_bytes(box.nbytes)}, {box.detail}")
        spans.append((x, w))
        x += w
    return spans


def pool_tree(plan: SglangPlan) -> Figure:
    cap = plan.capacity
    top, below = _levels(plan)
    fig = new_figure(9.0, 3.6)
    ax = fig.add_subplot()
    axes_width_in = fig.get_figwidth() - 0.2  # axis off: the constrained layout's padding
    notes: list[str] = []
    ax.add_patch(Rectangle((0, 2.0), 1, 0.8, facecolor=PALETTE["muted"], edgecolor="white"))
    ax.text(0.5, 2.4, f"rest for the cache on one rank: {gib(cap.rest_bytes)}  —  "
            "HybridLinearKVPool" if plan.layout.state else
            f"rest for the cache on one rank: {gib(cap.rest_bytes)}", ha="center", va="center",
            color="white", fontsize=9)
    spans = _draw(ax, top, 0, 1, 1.0, cap.rest_bytes, notes, axes_width_in)
    for (x, w), parts in zip(spans, below, strict=True):
        part_total = sum(p.nbytes for p in parts)
        if parts:
            _draw(ax, parts, x, w, 0.0, part_total, notes, axes_width_in)
    side = ", ".join(f"{r.component} {show_size(r.total_bytes)}" for r in cap.side.rows)
    notes.append(f"not budgeted (from the slack): {side}")
    ax.text(0, -0.15, "\n".join(notes), va="top", fontsize=7, color=PALETTE["muted"])
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.25 - NOTE_UNITS * len(notes), 2.9)
    # the figure grows with its notes, so the last line is never cut off at the bottom
    fig.set_figheight(0.75 + IN_PER_UNIT * (3.15 + NOTE_UNITS * len(notes)))
    ax.axis("off")
    ax.set_title(f"{plan.model.name}: HBM pools of one rank, to scale "
                 f"(T = {cap.max_total_tokens:,} tokens, K = {cap.state_slots:,} slots)")
    return fig
