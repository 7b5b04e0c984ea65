"""`kvledger simulate --compare`: the state policies side by side on one trace and memory."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kvledger.cli.app import console, emit_json, err_console

if TYPE_CHECKING:
    from kvledger.cli.options.sim import SimInputs
    from kvledger.sglang.plan import SglangPlan


def run_compare(plan: SglangPlan, work: SimInputs, *, figure_dir: Path | None, json: bool,
                progress: bool, ignored: list[str]) -> None:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress

    from kvledger.report.envelope import envelope
    from kvledger.report.policy_compare import (
        COMPARE_PAIRS,
        compare_policies,
        compare_table,
        comparison_json,
    )
    from kvledger.sim.sources import load_workload

    work.check()
    config = work.config(plan)
    workload = load_workload(trace=work.trace, generator=work.workload,
                             num_requests=work.num_requests, seed=work.seed,
                             rate_per_s=work.rate, time_scale=work.time_scale)
    bar = Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                   console=err_console, transient=True, disable=not progress)
    with bar:
        task = bar.add_task(f"policies on {workload.name}", total=len(COMPARE_PAIRS))
        comparison = compare_policies(plan, workload, config,
                                      on_done=lambda label: bar.advance(task))
    written: list[str] = []
    if figure_dir is not None:
        from kvledger.report.figures.canvas import save_figure
        from kvledger.report.figures.policy_bars import policy_bars

        written = [str(p) for p in save_figure(policy_bars(comparison), figure_dir, "policies")]
    if json:
        body = {**comparison_json(comparison), "figures": written}
        emit_json(envelope("simulate-compare", body, ignored_flags=ignored, notes=plan.notes))
        return
    console.print(compare_table(comparison))
    for path in written:
        console.print(f"figure → {path}")
    for flag in ignored:
        console.print(f"[yellow]ignored flag: {flag}[/]")
