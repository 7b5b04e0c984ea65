"""Simulation plots: hit rates over time, and each ledger's occupancy with its blocked spans.

Rows of the time series have uneven durations (a decode stride is one row), so series are
resampled onto at most `MAX_BINS` equal time bins: occupancy is the value at the end of the
bin, blocked time is the share of the bin the head of the queue spent waiting on a ledger.
"""

from __future__ import annotations

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from kvledger.report.figures.canvas import PALETTE, count_axis, new_figure
from kvledger.report.show import show_fraction
from kvledger.sim.metrics import SimSummary
from kvledger.sim.replay import SimResult
from kvledger.sim.series import Constraint, TimeSeries

MAX_BINS = 600
SMOOTH_BINS = 15  # moving window for the windowed hit rate


class Binned:
    """A time series resampled onto equal bins (seconds)."""

    def __init__(self, series: TimeSeries, bins: int = MAX_BINS) -> None:
        end_ms = series.column("time_ms")
        self.series = series
        span = float(end_ms[-1]) if len(end_ms) else 1.0
        self.edges_ms = np.linspace(0.0, span, bins + 1)
        # last row ending at or before each bin's right edge
        self.last = np.clip(np.searchsorted(end_ms, self.edges_ms[1:], side="right") - 1, 0, None)
        self.seconds = self.edges_ms[1:] / 1000
        start_ms = np.concatenate([[0.0], end_ms[:-1]])
        self._row_bin = np.clip(np.searchsorted(self.edges_ms, start_ms, side="right") - 1, 0,
                                bins - 1)
        self._durations = end_ms - start_ms
        self._bin_ms = span / bins

    def at_end(self, column: str) -> np.ndarray:
        return self.series.column(column)[self.last]

    def blocked_share(self, constraint: Constraint) -> np.ndarray:
        mask = (self.series.column("blocked").astype(np.int64) & constraint.bit) > 0
        weights = np.where(mask, self._durations, 0.0)
        total = np.bincount(self._row_bin, weights=weights, minlength=len(self.seconds))
        return np.clip(total / self._bin_ms, 0, 1) if self._bin_ms else total

    def delta(self, column: str) -> np.ndarray:
        values = self.at_end(column)
        return np.diff(np.concatenate([[0.0], values]))


def hit_rates(result: SimResult) -> Figure:
    b = Binned(result.series)
    prompt = b.at_end("prompt_tokens_cum")
    fig = new_figure(8.0, 3.0)
    ax = fig.add_subplot()
    with np.errstate(invalid="ignore", divide="ignore"):
        ax.plot(b.seconds, b.at_end("hit_tokens_cum") / prompt, color=PALETTE["kv"],
                label="token hit rate (cumulative)")
        ax.plot(b.seconds, b.at_end("usable_hit_tokens_cum") / prompt, color=PALETTE["state"],
                label="usable hit rate: KV with a state (cumulative)")
        kernel = np.ones(SMOOTH_BINS)
        prompt_window = np.convolve(b.delta("prompt_tokens_cum"), kernel, mode="same")
        usable_window = np.convolve(b.delta("usable_hit_tokens_cum"), kernel, mode="same")
        ax.plot(b.seconds, usable_window / prompt_window, color=PALETTE["state"], alpha=0.35,
                lw=0.8, label=f"usable hit rate, moving window of {SMOOTH_BINS} bins")
    ax.set_ylim(0, 1)
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("share of prompt tokens")
    ax.legend(fontsize=7, loc="upper left")
    s = result.summary
    ax.set_title(f"{s.workload}: token hit {show_fraction(s.counters.token_hit_rate)}, usable "
                 f"{show_fraction(s.counters.usable_hit_rate)}")
    return fig


def _shade(ax: Axes, b: Binned, constraint: Constraint) -> None:
    """Full-height red background where the queue waited on `constraint` most of the bin."""
    mostly = b.blocked_share(constraint) >= 0.5
    if mostly.any():
        ax.fill_between(b.seconds, 0, 1, where=mostly, step="pre", color=PALETTE["blocked"],
                        alpha=0.2, lw=0, transform=ax.get_xaxis_transform(),
                        label=f"queue blocked on {constraint.value}")


def _host_panel(ax: Axes, b: Binned, s: SimSummary) -> None:
    """Host pool occupancy as a share of each host pool (a run with a host tier only)."""
    h = s.host
    assert h is not None
    for column, capacity, color, label in (
            ("host_pages_used", h.capacity_pages, PALETTE["kv"], "host KV pages"),
            ("host_slots_used", h.capacity_slots, PALETTE["state"], "host state slots")):
        if capacity:
            ax.step(b.seconds, b.at_end(column) / capacity, color=color,
                    label=f"{label} (of {capacity:,})")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel(f"host pools used\n(share, {h.policy.value})")


def occupancy(result: SimResult) -> Figure:
    b, s = Binned(result.series), result.summary
    with_host = s.host is not None
    fig = new_figure(8.0, 8.5 if with_host else 6.5)
    axes = fig.subplots(4 if with_host else 3, 1, sharex=True)
    pages, slots, running = axes[:3]
    pages.stackplot(b.seconds, b.at_end("pages_requests"), b.at_end("pages_cache_locked"),
                    b.at_end("pages_cache_unlocked"),
                    colors=[PALETTE["kv"], PALETTE["indexer"], PALETTE["cache_unlocked"]],
                    labels=["own pages of running requests", "cache, pinned", "cache, evictable"],
                    step="pre")
    pages.axhline(s.token_pages, color="black", lw=0.8, ls="--", label=f"T = {s.token_pages:,} pages")
    _shade(pages, b, Constraint.TOKENS)
    pages.set_ylabel("token pages")
    count_axis(pages.yaxis)  # millions of pages: separators, not a "1e6" offset
    slots.stackplot(b.seconds, b.at_end("slots_requests"), b.at_end("slots_cache"),
                    colors=[PALETTE["state"], PALETTE["conv"]],
                    labels=["held by running requests", "checkpoints in the cache"], step="pre")
    slots.axhline(s.state_slots, color="black", lw=0.8, ls="--", label=f"K = {s.state_slots:,} slots")
    _shade(slots, b, Constraint.STATE)
    slots.set_ylabel("state slots")
    running.step(b.seconds, b.at_end("running"), color=PALETTE["kv"], label="running")
    running.step(b.seconds, b.at_end("waiting"), color=PALETTE["muted"], label="waiting")
    running.axhline(s.max_running_requests, color="black", lw=0.8, ls="--",
                    label=f"N = {s.max_running_requests:,}")
    _shade(running, b, Constraint.RUNNING)
    running.set_ylabel("requests")
    if with_host:
        _host_panel(axes[3], b, s)
    axes[-1].set_xlabel("simulated time (s)")
    for ax in axes:
        ax.legend(fontsize=7, loc="upper left", ncols=2)
        ax.set_ylim(bottom=0)
    fig.suptitle(f"{s.workload}: occupancy of each ledger on one rank (red: the queue's head "
                 "was blocked on it)", fontsize=10)
    return fig
