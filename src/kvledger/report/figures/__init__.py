"""Figures from the ledgers of any model and deployment, and from a simulation.

`PLAN_FIGURES` cover what the article's five figures show; `SIM_FIGURES` plot a replay;
`policy_bars` plots `simulate --compare`. A
figure that does not apply to the model (no indexer, no linear layers) says why instead of
drawing an empty picture. Import this package only where figures are drawn: it loads
matplotlib.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from matplotlib.figure import Figure

from kvledger.report.figures.canvas import save_figure, stamp
from kvledger.report.figures.hicache_cover import hicache_cover
from kvledger.report.figures.index_page import index_page
from kvledger.report.figures.layer_map import layer_map
from kvledger.report.figures.pool_tree import pool_tree
from kvledger.report.figures.sim_plots import hit_rates, occupancy
from kvledger.report.figures.token_bytes import token_bytes
from kvledger.sglang.plan import SglangPlan
from kvledger.sim.replay import SimResult


@dataclass(frozen=True, slots=True, kw_only=True)
class FigureSpec:
    stem: str  # file name without suffix
    caption: str
    draw: Callable  # (SglangPlan) or (SimResult) -> Figure | str (why it does not apply)


PLAN_FIGURES: tuple[FigureSpec, ...] = (
    FigureSpec(stem="fig1_layer_map", caption="Which layers keep token KV and which keep "
               "request state (article figure 1).", draw=layer_map),
    FigureSpec(stem="fig2_token_bytes", caption="Bytes per token by component, KV dtype and "
               "row layout (article figure 2).", draw=token_bytes),
    FigureSpec(stem="fig3_pool_tree", caption="The HBM pool hierarchy of one rank, to scale "
               "(article figure 3).", draw=pool_tree),
    FigureSpec(stem="fig4_index_page", caption="One index-key page: kpool groups, key and "
               "scale bytes, the compress tail (article figure 4).", draw=index_page),
    FigureSpec(stem="fig5_hicache_cover", caption="What HiCache copies to host: the article's "
               "release vs corrected (article figure 5).", draw=hicache_cover),
)
SIM_FIGURES: tuple[FigureSpec, ...] = (
    FigureSpec(stem="sim_hit_rates", caption="Token and usable hit rates over time.",
               draw=hit_rates),
    FigureSpec(stem="sim_occupancy", caption="Each ledger's occupancy over time and when it "
               "kept the queue waiting.", draw=occupancy),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Drawn:
    spec: FigureSpec
    figure: Figure | None
    skipped: str | None  # why the figure does not apply


def draw_all(plan: SglangPlan, result: SimResult | None = None) -> list[Drawn]:
    drawn = []
    for spec in PLAN_FIGURES:
        out = spec.draw(plan)
        drawn.append(Drawn(spec=spec, figure=None if isinstance(out, str) else stamp(out, plan),
                           skipped=out if isinstance(out, str) else None))
    if result is not None:
        drawn += [Drawn(spec=spec, figure=stamp(spec.draw(result), plan), skipped=None)
                  for spec in SIM_FIGURES]
    return drawn


def write_figures(plan: SglangPlan, out_dir: Path, result: SimResult | None = None
                  ) -> tuple[list[Path], list[str]]:
    """Save every applicable figure as SVG and PNG; return the files and the skip reasons."""
    files: list[Path] = []
    skipped: list[str] = []
    for item in draw_all(plan, result):
        if item.figure is None:
            skipped.append(f"{item.spec.stem}: {item.skipped}")
        else:
            files += save_figure(item.figure, out_dir, item.spec.stem)
    return files, skipped
