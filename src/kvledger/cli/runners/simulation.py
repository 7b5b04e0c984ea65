"""Run one simulation from the CLI's inputs: load the workload, replay it, show progress."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvledger.cli.app import err_console
from kvledger.cli.options.sim import SimInputs

if TYPE_CHECKING:
    from kvledger.sglang.plan import SglangPlan
    from kvledger.sim.replay import SimResult


def run_simulation(plan: SglangPlan, work: SimInputs, *, progress: bool) -> SimResult:
    """Load the workload and replay it, with a progress bar on stderr when asked."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from kvledger.sim.replay import simulate
    from kvledger.sim.sources import load_workload

    work.check()
    config = work.config(plan)
    if plan.layout.deployment.enable_hierarchical_cache:
        from kvledger.core.extras import MEMORY

        MEMORY.require("simulating the host tier (--enable-hierarchical-cache)")
    workload = load_workload(trace=work.trace, generator=work.workload,
                             num_requests=work.num_requests, seed=work.seed,
                             rate_per_s=work.rate, time_scale=work.time_scale)
    if not progress:
        return simulate(plan, workload, config)
    bar = Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), console=err_console, transient=True)
    with bar:
        task = bar.add_task(f"replaying {workload.name}", total=len(workload.requests))
        return simulate(plan, workload, config,
                        progress=[lambda done, total: bar.update(task, completed=done)])
