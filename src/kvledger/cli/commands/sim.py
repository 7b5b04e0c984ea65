"""`kvledger simulate`: replay a trace or a generated workload on a deployment's plan."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kvledger.cli.app import check_finite, command, console, emit_json, user_errors
from kvledger.cli.options.fleet import FleetInputs
from kvledger.cli.options.groups import option_group
from kvledger.cli.options.jobs import JobsInputs
from kvledger.cli.options.plan import JsonOpt, PlanInputs, plan_from
from kvledger.cli.options.sim import LossyOpt, SimInputs
from kvledger.cli.runners.simulation import run_simulation
from kvledger.core.limits import MAX_COUNT, check_int
from kvledger.sequential.vllm_spec import Scheduler

# SimInputs fields that drive SGLang's replay only: with --engine vllm alone they are refused
SGLANG_ONLY = ("chunked_prefill_size", "mamba_track_interval", "state_admission",
               "state_eviction", "hicache_write_policy", "host_state_backup", "l3_size",
               "l3_backend")


def _engines(engine: str | None, rules: str, extra: list[str]) -> tuple[str, ...]:
    """The engines `--engine` (else `--rules` or a pasted command) names, each checked."""
    from kvledger.cli.options.plan import choose_engines

    return choose_engines(engine, rules, extra).engines


def _check_vllm_run(sim: SimInputs, engines: tuple[str, ...], **alone: object) -> None:
    """What a run with vLLM cannot take: the SGLang-only modes, and SGLang's replay options
    when vLLM runs alone."""
    for flag, value in alone.items():
        if value not in (None, False):
            raise ValueError(f"{flag}: an SGLang simulation mode; not with --engine "
                             f"{','.join(engines)}")
    if "sglang" in engines:
        return
    defaults = SimInputs()
    for name in SGLANG_ONLY:
        if getattr(sim, name) != getattr(defaults, name):
            flag = "--" + name.replace("_", "-")
            raise ValueError(f"{flag}: an option of SGLang's replay; --engine vllm takes "
                             "--max-num-batched-tokens and vLLM's flags (add sglang to "
                             "--engine to run both)")


@command(help="Replay a workload (a Mooncake trace or a generator) against the prefix tree "
         "under a deployment's capacity plan: hit rates, evictions, which ledger blocks; with "
         "--enable-hierarchical-cache (--hicache-ratio / --hicache-size) also the host tier's "
         "backups, loadbacks and evictions. SGLang deployment flags may follow, as for "
         "`kvledger plan`.")
@option_group(PlanInputs, "inputs")
@option_group(SimInputs, "sim")
@option_group(FleetInputs, "fleet")
@option_group(JobsInputs, "jobs")
def simulate(ctx: typer.Context, inputs: PlanInputs, sim: SimInputs, fleet: FleetInputs,
             jobs: JobsInputs,
             csv: Annotated[Path | None, typer.Option(
                 "--csv", help="Write the per-step time series here.", dir_okay=False)] = None,
             no_progress: Annotated[bool, typer.Option(
                 "--no-progress", help="No progress bar on stderr.")] = False,
             compare: Annotated[bool, typer.Option(
                 "--compare", help="Replay the state policies side by side (engine, "
                 "FLOP-aware, Marconi, reuse-filtered, ghost-branch) on this trace and memory, "
                 "plus the FULL-only ceiling; --state-admission/--state-eviction are ignored. "
                 "With --engine vllm: vLLM's knobs (block size, retention interval, checkpoint "
                 "blocks) and kvledger's state policies on vLLM's cache, and the setting to "
                 "pick.")] = False,
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
                 "--engine", help="sglang (default), vllm (its block-hash prefix cache and "
                 "scheduler, from vLLM's plan), or sglang,vllm: both on the same trace and "
                 "deployment memory, one comparison table.")] = None,
             max_num_batched_tokens: Annotated[int | None, typer.Option(
                 "--max-num-batched-tokens", help="vLLM's token budget per step (default "
                 "vLLM's: 8192 on GPUs of at least 70 GiB that are not A100s, else 2048); "
                 "needs --engine vllm.")] = None,
             scheduler: Annotated[Scheduler | None, typer.Option(
                 "--scheduler", help="vLLM's scheduler: async (default, vLLM's: two steps in "
                 "flight) or sync; needs --engine vllm.")] = None,
             json: JsonOpt = False) -> None:
    from kvledger.report.sim_json import sim_json
    from kvledger.report.sim_view import render_sim

    with user_errors():
        engines = _engines(engine, inputs.rules, ctx.args)
        fleet.check()
        runner = jobs.runner()
        if runner.parallel and not compare:
            # a fleet's replicas share one router that reads them all at every arrival
            raise ValueError("--jobs/--ray: run --compare's independent replays at once; "
                             "needs --compare (a --replicas fleet is one coupled replay)")
        if (fleet.replicas is not None or fleet.disaggregated) and "vllm" in engines:
            raise ValueError("--replicas: fleets are of SGLang replicas; not with --engine vllm")
        if max_num_batched_tokens is not None:
            if "vllm" not in engines:
                raise ValueError("--max-num-batched-tokens: vLLM's token budget; needs "
                                 "--engine vllm or sglang,vllm (SGLang's is "
                                 "--chunked-prefill-size)")
            check_int("--max-num-batched-tokens", max_num_batched_tokens, low=1,
                      high=MAX_COUNT)
        if scheduler is not None and "vllm" not in engines:
            raise ValueError(f"--scheduler {scheduler.value}: vLLM's scheduler; needs --engine "
                             "vllm or sglang,vllm")
        if compare and "vllm" in engines:
            if "sglang" in engines:
                raise ValueError("--compare: one engine at a time (--engine sglang or "
                                 "--engine vllm)")
            _check_vllm_run(sim, engines, **{"--csv": csv, "--figure-dir": figure_dir,
                                             "--slot-economy": slot_economy,
                                             "--lossy-checkpoints": lossy_checkpoints})
            from kvledger.cli.runners.sim_vllm_compare import run_vllm_compare

            run_vllm_compare(inputs, sim, list(ctx.args),
                             max_num_batched_tokens=max_num_batched_tokens,
                             steps_in_flight=(scheduler or Scheduler.ASYNC).steps_in_flight,
                             json=json, progress=not no_progress, runner=runner)
            return
        if "vllm" in engines:
            _check_vllm_run(sim, engines, **{"--compare": compare, "--csv": csv,
                                             "--figure-dir": figure_dir,
                                             "--slot-economy": slot_economy,
                                             "--lossy-checkpoints": lossy_checkpoints})
            from kvledger.cli.runners.sim_engines import run_engines

            run_engines(inputs, sim, list(ctx.args), engine=",".join(engines),
                        max_num_batched_tokens=max_num_batched_tokens,
                        steps_in_flight=(scheduler or Scheduler.ASYNC).steps_in_flight,
                        json=json, progress=not no_progress)
            return
        plan, ignored = plan_from(inputs, ctx.args)
        if fleet.disaggregated:
            from kvledger.cli.runners.sim_pd import run_pd

            run_pd(inputs, list(ctx.args), plan, sim, fleet, json=json,
                   progress=not no_progress, ignored=list(ignored),
                   alone={"--compare": compare, "--csv": csv, "--slot-economy": slot_economy,
                          "--lossy-checkpoints": lossy_checkpoints})
            return
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
                        progress=not no_progress, ignored=list(ignored), runner=runner)
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
