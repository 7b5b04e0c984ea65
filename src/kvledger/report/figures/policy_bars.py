"""The `simulate --compare` figure: per policy, token and usable hit, state evictions and
TTFT p95, with the FULL-only ceiling and the offline bound drawn as lines on the hit panel."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from kvledger.report.figures.canvas import PALETTE, count_axis, new_figure
from kvledger.report.policy_compare import Comparison
from kvledger.report.show import show_fraction


def policy_bars(comparison: Comparison, title: str = "") -> Figure:
    """The three panels under one title: what was compared, on which workload and memory."""
    rows = [r for r in comparison.rows if r.state_evictions is not None]
    ceiling = comparison.rows[-1]
    labels = [r.label.replace(" + ", "\n+ ") for r in rows]
    x = np.arange(len(rows))
    fig = new_figure(11.0, 3.4)
    hit, evict, ttft = fig.subplots(1, 3)
    hit.bar(x - 0.2, [r.token_hit for r in rows], 0.4, color=PALETTE["kv"], label="token hit")
    hit.bar(x + 0.2, [r.usable_hit for r in rows], 0.4, color=PALETTE["state"],
            label="usable hit (KV with a state)")
    hit.axhline(ceiling.usable_hit, color=PALETTE["muted"], ls="--", lw=1,
                label=f"FULL-only ceiling {show_fraction(ceiling.usable_hit)}")
    if comparison.bound is not None:
        hit.axhline(comparison.bound.usable_hit, color=PALETTE["muted"], ls=":", lw=1.2,
                    label=f"{comparison.bound.label} {show_fraction(comparison.bound.usable_hit)}")
    hit.set_ylim(0, 1)
    hit.set_ylabel("share of prompt tokens")
    # below the panels, not over the bars (a hit near the ceiling reaches the top)
    fig.legend(*hit.get_legend_handles_labels(), loc="outside lower center", ncol=4, fontsize=7)
    evict.bar(x, [r.state_evictions or 0 for r in rows], color=PALETTE["bad"])
    evict.set_ylabel("states evicted from device")
    # a count: from 0, and at least to 1 (no negative or fractional axis when none evicted)
    evict.set_ylim(0, max(1, *(r.state_evictions or 0 for r in rows)) * 1.05)
    count_axis(evict.yaxis)
    ttft.bar(x, [(r.ttft_p95_ms or 0.0) / 1e3 for r in rows], color=PALETTE["warn"])
    ttft.set_ylabel("TTFT p95 (s)")
    for ax in (hit, evict, ttft):
        ax.set_xticks(x, labels, fontsize=6, rotation=60, ha="right")
    hit.set_title("prefix-cache hit per state policy")
    evict.set_title("state churn")
    ttft.set_title("time to first token, p95")
    fig.suptitle(title or f"State policies side by side (ratios over {comparison.baseline.label}; "
                 f"FULL-only ceiling: {comparison.ceiling_pool_tokens:,} KV tokens, no states)",
                 fontsize=10)
    return fig
