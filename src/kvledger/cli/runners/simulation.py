"""Run one simulation from the CLI's inputs: load the workload, replay it, show progress."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvledger.cli.app import err_console
from kvledger.cli.options.sim import SimInputs

if TYPE_CHECKING:
    from kvledger.sglang.plan import SglangPlan
    from kvledger.sim.replay import SimResult
    from kvledger.sim.workload import Workload


def load_inputs(work: SimInputs) -> Workload:
    """The workload the inputs name, every value checked first (`SimInputs.check`)."""
    from kvledger.sim.sources import load_workload

    work.check()
    return load_workload(trace=work.trace, generator=work.workload,
                         num_requests=work.num_requests, seed=work.seed,
                         rate_per_s=work.rate, time_scale=work.time_scale)


def run_simulation(plan: SglangPlan, work: SimInputs, *, progress: bool) -> SimResult:
    """Load the workload and replay it, with a progress bar on stderr when asked: one line
    while a trace is read or requests are generated (a million take a minute), then one per
    request replayed."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from kvledger.sim.replay import simulate

    work.check()
    config = work.config(plan)
    if plan.layout.deployment.enable_hierarchical_cache:
        from kvledger.core.extras import MEMORY

        MEMORY.require("simulating the host tier (--enable-hierarchical-cache)")
    if not progress:
        return simulate(plan, load_inputs(work), config)
    bar = Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), console=err_console, transient=True)
    with bar:
        what = (f"reading {work.trace.name}" if work.trace is not None else
                f"generating {work.num_requests or 'the'} {work.workload} requests")
        loading = bar.add_task(what, total=None)
        bar.refresh()  # shown now: generating holds the interpreter for up to a minute
        workload = load_inputs(work)
        bar.remove_task(loading)
        task = bar.add_task(f"replaying {workload.name}", total=len(workload.requests))
        return simulate(plan, workload, config,
                        progress=[lambda done, total: bar.update(task, completed=done)])
