"""`kvledger simulate`: replay a trace or a generated workload on a deployment's plan."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kvledger.cli.app import check_finite, command, console, emit_json, user_errors
from kvledger.cli.options.fleet import FleetInputs
from kvledger.cli.options.groups import option_group
from kvledger.cli.options.plan import JsonOpt, PlanInputs, plan_from
from kvledger.cli.options.sim import LossyOpt, SimInputs
from kvledger.cli.runners.simulation import run_simulation
from kvledger.core.engines import Engine


def _refuse_vllm(engine: str | None) -> None:
    """`--engine` is a real option, so no prefix of it reads as an SGLang flag; only SGLang
    simulates a serving run today."""
    if engine is None:
        return
    words = [w.strip() for w in engine.split(",")]
    for word in words:
        if word not in {e.value for e in Engine}:
            raise ValueError(f"--engine {engine!r}: expected sglang (vllm is not simulated yet)")
    if Engine.VLLM.value in words:
        raise ValueError(f"--engine {engine}: `simulate` serves SGLang's radix tree only; a "
                         "serving simulation of vLLM's prefix cache is not implemented yet "
                         "(its sequential replay is `kvledger replay --engine vllm`)")


@command(help="Replay a workload (a Mooncake trace or a generator) against the prefix tree "
         "under a deployment's capacity plan: hit rates, evictions, which ledger blocks; with "
         "--enable-hierarchical-cache (--hicache-ratio / --hicache-size) also the host tier's "
         "backups, loadbacks and evictions. SGLang deployment flags may follow, as for "
         "`kvledger plan`.")
@option_group(PlanInputs, "inputs")
@option_group(SimInputs, "sim")
@option_group(FleetInputs, "fleet")
def simulate(ctx: typer.Context, inputs: PlanInputs, sim: SimInputs, fleet: FleetInputs,
             csv: Annotated[Path | None, typer.Option(
                 "--csv", help="Write the per-step time series here.", dir_okay=False)] = None,
             no_progress: Annotated[bool, typer.Option(
                 "--no-progress", help="No progress bar on stderr.")] = False,
             compare: Annotated[bool, typer.Option(
                 "--compare", help="Replay the state policies side by side (engine, "
                 "FLOP-aware, Marconi, reuse-filtered, ghost-branch) on this trace and memory, "
                 "plus the FULL-only ceiling; --state-admission/--state-eviction are ignored."
             )] = False,
             figure_dir: Annotated[Path | None, typer.Option(
                 "--figure-dir", help="With --compare: write policies.svg and .png here.",
                 file_okay=False)] = None,
             slot_economy: Annotated[str | None, typer.Option(
                 "--slot-economy", help="What-if, never the default: shared-track[=POOL_SLOTS] "
                 "replays the engine's slot economy and one where ping-pong track slots come "
                 "from a shared pool (default 8) only in steps that save a checkpoint; reports "
                 "the slots freed and the hit they buy.")] = None,
             lossy_checkpoints: LossyOpt = None,
             engine: Annotated[str | None, typer.Option(
                 "--engine", help="sglang (default; the only engine simulated today).")] = None,
             json: JsonOpt = False) -> None:
    from kvledger.report.sim_json import sim_json
    from kvledger.report.sim_view import render_sim

    with user_errors():
        _refuse_vllm(engine)
        plan, ignored = plan_from(inputs, ctx.args)
        fleet.check()
        if fleet.replicas is not None:
            if compare or csv is not None or slot_economy is not None or lossy_checkpoints:
                raise ValueError("--replicas: runs on its own (not with --compare, --csv, "
                                 "--slot-economy or --lossy-checkpoints)")
            from kvledger.cli.runners.sim_fleet import run_fleet

            run_fleet(plan, sim, fleet, json=json, progress=not no_progress,
                      ignored=list(ignored))
            return
        if figure_dir is not None and not compare:
            raise ValueError("--figure-dir: needs --compare")
        if lossy_checkpoints is not None:
            if compare or csv is not None or slot_economy is not None:
                raise ValueError("--lossy-checkpoints: runs on its own (not with --compare, "
                                 "--csv or --slot-economy)")
            from kvledger.cli.runners.sim_lossy import run_lossy

            run_lossy(plan, sim, kind=lossy_checkpoints, json=json, progress=not no_progress,
                      ignored=list(ignored))
            return
        if slot_economy is not None:
            if compare or csv is not None:
                raise ValueError("--slot-economy: runs on its own (not with --compare or --csv)")
            from kvledger.cli.runners.sim_slot_economy import run_slot_economy

            run_slot_economy(plan, sim, spec=slot_economy, json=json,
                             progress=not no_progress, ignored=list(ignored))
            return
        if compare:
            from kvledger.cli.runners.sim_compare import run_compare

            run_compare(plan, sim, figure_dir=figure_dir, json=json,
                        progress=not no_progress, ignored=list(ignored))
            return
        result = run_simulation(plan, sim, progress=not no_progress)
        if csv is not None:
            result.series.write_csv(csv)
    doc = sim_json(result.summary, ignored_flags=ignored, notes=plan.notes,
                   csv=str(csv) if csv else None)
    from kvledger.cli.runners.sim_fleet import add_single_rank_verdict

    verdict = add_single_rank_verdict(doc, plan, sim, result)
    if json:
        emit_json(doc)
        return
    check_finite(doc)  # the table shows the same numbers
    render_sim(result.summary, console)
    for line in verdict:
        console.print(line)
    if csv is not None:
        console.print(f"time series: {len(result.series):,} rows → {csv}")
    for flag in ignored:
        console.print(f"[yellow]ignored flag: {flag}[/]")
