"""Figures are legible: no text outside the figure, no tick labels running into each other,
no label spilling out of its box, and every figure has a title.

Each case is one that failed before: the README's deployment of GLM-5.3-Flash (DP attention:
figure 3's IndexKeyCache label taller than its box), Llama-3.1-8B on one H200 (figure 5's
and figure 2's six-digit byte ticks overlapping) and Kimi-Linear at TP 4 (figure 1's title
wider than the figure).
"""

from __future__ import annotations

import itertools

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.patches import Rectangle
from matplotlib.text import Text

from kvledger.report.figures import PLAN_FIGURES
from kvledger.report.figures.canvas import stamp
from kvledger.sglang.deploy import Deployment
from kvledger.sglang.plan import make_plan

CASES = {
    "glm-5.3-flash dp-attention": ("glm-5.3-flash",
                                   Deployment(tp_size=8, dp_size=8, enable_dp_attention=True)),
    "llama-3.1-8b": ("llama-3.1-8b", Deployment()),
    "kimi-linear tp 4": ("kimi-linear-48b-a3b-instruct", Deployment(tp_size=4)),
}


def drawn_texts(fig, renderer) -> list[Text]:
    """Every text matplotlib draws: free text, titles, and the tick labels within the view."""
    ticks, shown = set(), []
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            for loc, label in zip(axis.get_majorticklocs(), axis.get_majorticklabels(),
                                  strict=False):
                ticks.add(id(label))
                if ax.axison and lo - 1e-9 <= loc <= hi + 1e-9 and label.get_text():
                    shown.append(label)
    free = [t for t in fig.findobj(Text)
            if t.get_visible() and t.get_text().strip() and id(t) not in ticks]
    return free + shown


def layout_problems(fig) -> list[str]:
    FigureCanvasAgg(fig)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    width, height = fig.bbox.width, fig.bbox.height
    out = []
    texts = drawn_texts(fig, renderer)
    for t in texts:
        b = t.get_window_extent(renderer)
        if b.x0 < -1 or b.y0 < -1 or b.x1 > width + 1 or b.y1 > height + 1:
            out.append(f"outside the figure: {t.get_text()[:50]!r}")
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            labels = [t for t in axis.get_ticklabels() if t in texts]
            for a, b in itertools.combinations(labels, 2):
                if a.get_window_extent(renderer).padded(2).overlaps(b.get_window_extent(renderer)):
                    out.append(f"ticks overlap: {a.get_text()!r} {b.get_text()!r}")
        rects = [p.get_window_extent(renderer) for p in ax.patches if isinstance(p, Rectangle)]
        for t in ax.texts:
            b = t.get_window_extent(renderer)
            centre = b.get_points().mean(axis=0)
            box = next((r for r in rects if r.contains(*centre) and r.width > 2), None)
            if box is not None and (b.x0 < box.x0 - 1 or b.x1 > box.x1 + 1
                                    or b.y0 < box.y0 - 1 or b.y1 > box.y1 + 1):
                out.append(f"label spills out of its box: {t.get_text()[:50]!r}")
    return out


@pytest.mark.parametrize("case", list(CASES))
def test_plan_figures_are_legible(case):
    model, dep = CASES[case]
    plan = make_plan(model, dep, gpu="H200")
    for spec in PLAN_FIGURES:
        fig = spec.draw(plan)
        if isinstance(fig, str):
            continue
        stamp(fig, plan)
        assert layout_problems(fig) == [], spec.stem


def test_pool_tree_keeps_a_label_for_the_index_keys():
    # the box is ~0.5 inch wide: the name goes on two smaller lines rather than spill out
    plan = make_plan("glm-5.3-flash", CASES["glm-5.3-flash dp-attention"][1], gpu="H200")
    fig = next(s for s in PLAN_FIGURES if s.stem == "fig3_pool_tree").draw(plan)
    labels = [t.get_text() for t in fig.axes[0].texts]
    assert "IndexKey\nCache" in labels
    assert any(t.startswith("IndexKeyCache: 3,783,191,808 B (3.52 GiB)") for t in
               labels[-1].splitlines())


def test_the_policies_figure_has_a_title_and_legible_axes():
    from kvledger.report.figures.policy_bars import policy_bars
    from kvledger.report.policy_compare import COMPARE_PAIRS, compare_policies
    from kvledger.sim.config import SimConfig
    from kvledger.sim.generators import GENERATORS, GeneratorParams

    plan = make_plan(kv_cache_dtype="fp8_e4m3")
    work = GENERATORS["shared-prompt"].generate(GeneratorParams(num_requests=20, seed=2))
    comparison = compare_policies(plan, work, SimConfig(), COMPARE_PAIRS[:2])
    fig = stamp(policy_bars(comparison, "State policies on shared-prompt"), plan)
    assert fig.get_suptitle().startswith("State policies on shared-prompt\nglm-5.3-flash · ")
    assert layout_problems(fig) == []
    assert policy_bars(comparison).get_suptitle().startswith("State policies side by side")


def test_simulation_figures_are_legible():
    # the stamped deployment line of Qwen3-Next on an H200 is wider than the 8-inch
    # occupancy figure: it wraps instead of being cut at both edges
    from kvledger.report.figures import SIM_FIGURES
    from kvledger.sim.generators import GENERATORS, GeneratorParams
    from kvledger.sim.replay import simulate

    plan = make_plan("qwen3-next-80b-a3b-instruct", Deployment(tp_size=2), gpu="H200")
    result = simulate(plan, GENERATORS["chat"].generate(GeneratorParams(num_requests=30, seed=4)))
    for spec in SIM_FIGURES:
        fig = stamp(spec.draw(result), plan)
        assert layout_problems(fig) == [], spec.stem
