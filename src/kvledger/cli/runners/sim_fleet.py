"""`simulate --replicas R --router P`: load the workload, replay the fleet, print it."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from kvledger.cli.app import check_finite, console, emit_json, err_console
from kvledger.cli.options.fleet import FleetInputs
from kvledger.cli.options.sim import SimInputs
from kvledger.cli.runners.simulation import load_inputs

if TYPE_CHECKING:
    from kvledger.sglang.plan import SglangPlan


def run_fleet(plan: SglangPlan, work: SimInputs, fleet: FleetInputs, *, json: bool,
              progress: bool, ignored: list[str]) -> None:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from kvledger.report.fleet_json import fleet_json
    from kvledger.report.fleet_view import render_fleet
    from kvledger.sim.fleet.run import simulate_fleet
    from kvledger.sim.fleet.summary import summarize

    if plan.layout.deployment.enable_hierarchical_cache:
        from kvledger.core.extras import MEMORY

        MEMORY.require("simulating the host tier (--enable-hierarchical-cache)")
    config = work.config(plan)
    workload = load_inputs(work)
    if fleet.rate_scale is not None and fleet.rate_scale != 1:
        workload = replace(workload.stretched(1 / fleet.rate_scale),
                           name=f"{workload.name} (rate ×{fleet.rate_scale:g})")
    observers = []
    bar = Progress("[progress.description]{task.description}", BarColumn(),
                   MofNCompleteColumn(), TimeElapsedColumn(), console=err_console,
                   transient=True, disable=not progress)
    with bar:
        task = bar.add_task(f"routing {workload.name}", total=len(workload.requests))
        observers.append(lambda done, total: bar.update(task, completed=done))
        reuse = ()
        if fleet.l3_shared:
            if config.l3 is None:
                raise ValueError("--l3-shared: needs --l3-size GiB (the shared tier's size)")
            from kvledger.sim.fleet.store_reuse import store_reuse

            reuse, result = store_reuse(plan, workload, config, replicas=fleet.replicas or 1,
                                        router=fleet.router, progress=observers)
        else:
            result = simulate_fleet(plan, workload, config, replicas=fleet.replicas or 1,
                                    router=fleet.router, progress=observers)
    summary = summarize(result, chunk_tokens=config.chunked_prefill_tokens)
    doc = fleet_json(summary, ignored_flags=tuple(ignored), notes=tuple(plan.notes))
    if fleet.l3_shared:
        from kvledger.report.fleet_store import reuse_json

        doc["store_reuse"] = reuse_json(reuse)
    if json:
        emit_json(doc)
        return
    check_finite(doc)
    render_fleet(summary, console)
    if fleet.l3_shared:
        from kvledger.report.fleet_store import render_reuse

        render_reuse(doc["store_reuse"], console)
    for flag in ignored:
        console.print(f"[yellow]ignored flag: {flag}[/]")


def add_single_rank_verdict(doc: dict, plan: SglangPlan, work: SimInputs, result) -> list:
    """One rank's overload verdict into `simulate`'s document (`overload`, and
    `latency.saturated`); returns the table lines that say it."""
    from kvledger.report.fleet_json import overload_json
    from kvledger.report.fleet_view import overload_lines
    from kvledger.sim.fleet.summary import assess
    from kvledger.sim.setup import step_timer

    config = work.config(plan)
    timer, timing = step_timer(plan, config)
    verdict = assess([result.summary], result.requests, timer,
                     chunk_tokens=config.chunked_prefill_tokens)
    doc["overload"] = overload_json(verdict, timing)
    doc["latency"]["saturated"] = verdict.overload.saturated
    return overload_lines(verdict)
