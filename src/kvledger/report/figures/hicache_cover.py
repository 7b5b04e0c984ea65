"""Figure 5 of the article: what HiCache covers, in the article's release and in ours.

Left: each object HBM holds for one rank, its device bytes, and whether a host copy exists
under each view (`kvledger.sglang.hicache`: the article's 0.5.21 host pools vs the corrected ones).
Right: host bytes per cached token under each view next to the device's, which shows the
article release's two defects at a glance (a host KV row narrower than the device row, and no
index keys on host).
"""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from kvledger.report.figures.canvas import PALETTE, count_axis, gib, new_figure
from kvledger.sglang.hicache import OUR_HOST, CopyStatus, HostObject, HostRules, host_token_ledger
from kvledger.sglang.plan import SglangPlan

STATUS_COLOUR = {
    CopyStatus.COPIED: PALETTE["ok"],
    CopyStatus.TRUNCATED: PALETTE["bad"],
    CopyStatus.MISSING: PALETTE["bad"],
    CopyStatus.NOT_IN_TREE: PALETTE["side"],
}
SHORT = {
    CopyStatus.COPIED: "host copy",
    CopyStatus.TRUNCATED: "truncated row",
    CopyStatus.MISSING: "no host copy",
    CopyStatus.NOT_IN_TREE: "not in the tree",
}


def _device_bytes(plan: SglangPlan) -> dict[HostObject, int]:
    lay, cap = plan.layout, plan.capacity
    rows = cap.max_total_tokens + lay.page_tokens
    out = {HostObject.KV: rows * lay.kv_row.row_bytes * plan.model.num_full_layers}
    if lay.index_key is not None:
        out[HostObject.INDEX_KEYS] = rows * lay.index_key.reserved_bytes * plan.model.num_indexer_layers
    if lay.state is not None:
        out[HostObject.STATE] = cap.state_pool_bytes
    if (tail := lay.tail(cap.max_running_requests)) is not None:
        out[HostObject.COMPRESS_TAIL] = tail.bytes_per_layer * plan.model.num_indexer_layers
    return out


def hicache_cover(plan: SglangPlan) -> Figure:
    lay = plan.layout
    device = _device_bytes(plan)
    views = (HostRules.from_rules(lay.rules), OUR_HOST)  # as the plan's host tables
    fig = new_figure(10.0, 3.2)
    grid, bars = fig.subplots(1, 2, width_ratios=[1.5, 1])
    objects = [obj for obj in HostObject if obj in device]
    for i, obj in enumerate(objects):
        y = len(objects) - 1 - i
        nbytes = device[obj]
        size = gib(nbytes) if nbytes >= 2**30 else f"{nbytes / 2**20:,.2f} MiB"
        grid.text(0.0, y + 0.5, f"{obj.label(lay.kv_row)}\n{size} on device", va="center",
                  fontsize=8)
        for j, view in enumerate(views):
            status = view.status(obj, lay)
            colour = STATUS_COLOUR[status] if status else PALETTE["free"]
            grid.add_patch(Rectangle((1 + j, y + 0.08), 0.95, 0.84, facecolor=colour,
                                     edgecolor="white"))
            grid.text(1.475 + j, y + 0.5, SHORT[status] if status else "—", ha="center",
                      va="center", fontsize=8, color="white")
    for j, view in enumerate(views):
        grid.text(1.475 + j, len(objects) + 0.1, view.name, ha="center", fontsize=8)
    grid.set_xlim(0, 3)
    grid.set_ylim(0, len(objects) + 0.5)
    grid.axis("off")
    device_row = plan.ledgers.token.total_bytes
    labels, values, colours = ["device"], [device_row], [PALETTE["kv"]]
    for view in views:
        labels.append(f"host, {view.name}")
        values.append(host_token_ledger(lay, view).total_bytes)
        colours.append(PALETTE["bad"] if values[-1] < device_row else PALETTE["ok"])
    bars.barh(range(3), values, color=colours)
    for y, value in enumerate(values):
        bars.text(value, y, f" {value:,} B", va="center", fontsize=8)
    bars.set_yticks(range(3), labels, fontsize=8)
    bars.invert_yaxis()
    bars.set_xlim(0, max(values) * 1.35)
    bars.set_xlabel("bytes per cached token (all full layers)")
    count_axis(bars.xaxis)
    fig.suptitle(f"{plan.model.name}: what HiCache copies to host — {lay.rules.name} vs "
                 "kvledger's host tier", fontsize=10)
    return fig
