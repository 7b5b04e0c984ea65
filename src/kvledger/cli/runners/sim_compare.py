"""`kvledger simulate --compare`: the state policies side by side on one trace and memory."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kvledger.cli.app import console, emit_json, err_console
from kvledger.cli.runners.simulation import load_inputs

if TYPE_CHECKING:
    from kvledger.cli.options.sim import SimInputs
    from kvledger.core.runner import Runner
    from kvledger.sglang.plan import SglangPlan


def run_compare(plan: SglangPlan, work: SimInputs, *, figure_dir: Path | None, json: bool,
                progress: bool, ignored: list[str], runner: Runner) -> None:
    from kvledger.cli.runners.run_bar import RunBar
    from kvledger.core.envelope import envelope
    from kvledger.report.policy_compare import COMPARE_PAIRS, compare_policies
    from kvledger.report.policy_compare_view import compare_table, comparison_json

    work.check()
    config = work.config(plan)
    workload = load_inputs(work)
    with RunBar(f"policies on {workload.name}", console=err_console,
                enabled=progress) as bar:
        comparison = compare_policies(plan, workload, config, COMPARE_PAIRS, runner=runner,
                                      observer=bar)
    written: list[str] = []
    if figure_dir is not None:
        from kvledger.report.figures.canvas import save_figure, stamp
        from kvledger.report.figures.policy_bars import policy_bars

        title = (f"State policies on {workload.name}: prefix-cache hit, state churn and TTFT "
                 f"p95 (FULL-only ceiling: {comparison.ceiling_pool_tokens:,} KV tokens, no "
                 "states)")
        figure = stamp(policy_bars(comparison, title), plan)
        written = [str(p) for p in save_figure(figure, figure_dir, "policies")]
    if json:
        body = {**comparison_json(comparison), "figures": written}
        from kvledger.report import hit_rates

        emit_json(envelope("simulate-compare", body, ignored_flags=ignored,
                           notes=[*plan.notes, hit_rates.SIMULATE, hit_rates.CEILING]))
        return
    console.print(compare_table(comparison))
    for path in written:
        console.print(f"figure → {path}")
    for flag in ignored:
        console.print(f"[yellow]ignored flag: {flag}[/]")
