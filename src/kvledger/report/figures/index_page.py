"""Figure 4 of the article: one page of the DSA index-key cache, and the compress tail.

Top: the page's tokens in kpool groups (each complete group is pooled into one index key).
Middle: the page's bytes as `IndexKeyCache` stores them — all key bytes, then all scale
bytes — with the rows that pooled keys fill told apart from rows reserved but never written.
Bottom: the per-request compress tail, which holds the open (incomplete) group outside the
page. All numbers come from the layout's `IndexKeySpec` and `TailSpec`.
"""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from kvledger.report.figures.canvas import PALETTE, new_figure
from kvledger.sglang.plan import SglangPlan


def index_page(plan: SglangPlan) -> Figure | str:
    lay = plan.layout
    key = lay.index_key
    if key is None:
        return f"{plan.model.name} has no DSA indexer: no index-key pages"
    page, kpool = key.page_tokens, key.kpool
    rows = key.page_bytes // key.row_bytes  # key rows a page has room for
    groups = page // kpool
    written = min(groups, rows)
    fig = new_figure(9.0, 3.8)
    ax = fig.add_subplot()
    cell = 1 / page
    for t in range(page):
        shade = PALETTE["indexer"] if (t // kpool) % 2 == 0 else PALETTE["indexer_written"]
        ax.add_patch(Rectangle((t * cell, 2.2), cell, 0.5, facecolor=shade, edgecolor="white",
                               lw=0.3))
    ax.text(0, 2.8, f"page = {page} tokens = {groups} groups of kpool {kpool}: each complete "
            f"group is pooled into one {key.row_bytes} B index key", fontsize=8)
    key_share = key.key_bytes / key.row_bytes
    segments = [
        (f"{written} written key rows × {key.key_bytes} B", written * key.key_bytes,
         PALETTE["indexer_written"]),
        (f"{rows - written} reserved, unwritten", (rows - written) * key.key_bytes,
         PALETTE["free"]),
        (f"scales {written} × {key.scale_bytes} B", written * key.scale_bytes, PALETTE["tail"]),
        ("", (rows - written) * key.scale_bytes, PALETTE["free"]),
    ]
    x = 0.0
    for label, nbytes, colour in segments:
        w = nbytes / key.page_bytes
        ax.add_patch(Rectangle((x, 1.0), w, 0.7, facecolor=colour, edgecolor="white"))
        if label and w > 0.12:
            ax.text(x + w / 2, 1.35, label, ha="center", va="center", fontsize=7)
        x += w
    ax.text(0, 1.78, f"page bytes = {page} tokens × {key.reserved_bytes} B reserved = "
            f"{key.page_bytes:,} B = {rows} rows: {rows} × {key.key_bytes} B keys, then "
            f"{rows} × {key.scale_bytes} B scales", fontsize=8)
    ax.annotate("", xy=(key_share, 0.95), xytext=(key_share, 0.75),
                arrowprops={"arrowstyle": "-", "color": PALETTE["muted"]})
    ax.text(key_share, 0.62, f"keys | scales at byte {rows * key.key_bytes:,}", ha="center",
            fontsize=7, color=PALETTE["muted"])
    tail = lay.tail(plan.capacity.max_running_requests)
    if tail is not None:
        ax.add_patch(Rectangle((0, 0.0), 0.35, 0.4, facecolor=PALETTE["tail"], edgecolor="white"))
        ax.text(0.175, 0.2, "compress tail (per request row)", ha="center", va="center",
                fontsize=7, color="white")
        ax.text(0.37, 0.2, f"2 × ({tail.rows}, {tail.width_tokens}, {tail.head_dim}) bf16 per "
                f"indexer layer = {tail.bytes_per_layer:,} B:\nthe open group's tokens, outside "
                "the page, the token budget and HiCache", va="center", fontsize=7)
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.1, 3.1)
    ax.axis("off")
    ax.set_title(f"{plan.model.name}: one index-key page per indexer layer ({lay.rules.name}); "
                 f"written {written * key.row_bytes / page:g} of {key.reserved_bytes} B/token")
    return fig
