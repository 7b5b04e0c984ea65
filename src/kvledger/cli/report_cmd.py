"""`kvledger figures` and `kvledger report`: pictures and a self-contained HTML page."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kvledger.cli.app import command, console, user_errors
from kvledger.cli.options import (
    AvailOpt,
    GpuOpt,
    ModelOpt,
    PlanInputs,
    RulesOpt,
    WeightsOpt,
    plan_from,
)
from kvledger.cli.sim_cmd import (
    COST_DEFAULTS,
    SIM_DEFAULTS,
    ChunkOpt,
    DecodeCostOpt,
    NumOpt,
    OverheadOpt,
    PrefillCostOpt,
    RateOpt,
    ScaleOpt,
    SeedOpt,
    TraceOpt,
    TrackOpt,
    WorkloadInputs,
    WorkloadOpt,
    run_simulation,
    sim_config,
)
from kvledger.rules import DEFAULT_RULES

if TYPE_CHECKING:
    from kvledger.plan import Plan
    from kvledger.sim.replay import SimResult

HELP_TAIL = (" With --trace or --workload a simulation runs too. SGLang deployment flags may "
             "follow, as for `kvledger plan`.")


def _simulate_if_asked(plan: Plan, work: WorkloadInputs, chunk: int, track: int, overhead: float,
                       prefill: float, decode: float) -> SimResult | None:
    if work.trace is None and work.workload is None:
        return None
    return run_simulation(plan, work, sim_config(chunk, track, overhead, prefill, decode),
                          progress=True)


@command(help="Draw the article's five figures for a model and deployment (SVG and PNG)."
         + HELP_TAIL)
def figures(ctx: typer.Context,
            out: Annotated[Path, typer.Option("--out", help="Directory for the files.",
                                              file_okay=False)] = Path("figures"),
            trace: TraceOpt = None, workload: WorkloadOpt = None, num_requests: NumOpt = None,
            seed: SeedOpt = 0, rate: RateOpt = None, time_scale: ScaleOpt = 1.0,
            chunked_prefill_size: ChunkOpt = SIM_DEFAULTS.chunked_prefill_tokens,
            mamba_track_interval: TrackOpt = SIM_DEFAULTS.mamba_track_interval_tokens,
            step_overhead_ms: OverheadOpt = COST_DEFAULTS.overhead_ms,
            prefill_ms_per_token: PrefillCostOpt = COST_DEFAULTS.prefill_ms_per_token,
            decode_ms_per_token: DecodeCostOpt = COST_DEFAULTS.decode_ms_per_token,
            model: ModelOpt = None, rules: RulesOpt = DEFAULT_RULES, gpu: GpuOpt = None,
            available_gib: AvailOpt = None, weights_gib: WeightsOpt = None) -> None:
    from kvledger.report.figures import write_figures

    with user_errors():
        plan, _ = plan_from(PlanInputs(model, rules, gpu, available_gib, weights_gib), ctx.args)
        result = _simulate_if_asked(
            plan, WorkloadInputs(trace, workload, num_requests, seed, rate, time_scale),
            chunked_prefill_size, mamba_track_interval, step_overhead_ms, prefill_ms_per_token,
            decode_ms_per_token)
        files, skipped = write_figures(plan, out, result)
    for path in files:
        console.print(str(path), highlight=False)
    for reason in skipped:
        console.print(f"[yellow]skipped {reason}[/]")


@command(help="One self-contained HTML page: plan tables, figures and simulation results."
         + HELP_TAIL)
def report(ctx: typer.Context,
           out: Annotated[Path, typer.Option("--out", help="The HTML file to write.",
                                             dir_okay=False)] = Path("report.html"),
           trace: TraceOpt = None, workload: WorkloadOpt = None, num_requests: NumOpt = None,
           seed: SeedOpt = 0, rate: RateOpt = None, time_scale: ScaleOpt = 1.0,
           chunked_prefill_size: ChunkOpt = SIM_DEFAULTS.chunked_prefill_tokens,
           mamba_track_interval: TrackOpt = SIM_DEFAULTS.mamba_track_interval_tokens,
           step_overhead_ms: OverheadOpt = COST_DEFAULTS.overhead_ms,
           prefill_ms_per_token: PrefillCostOpt = COST_DEFAULTS.prefill_ms_per_token,
           decode_ms_per_token: DecodeCostOpt = COST_DEFAULTS.decode_ms_per_token,
           model: ModelOpt = None, rules: RulesOpt = DEFAULT_RULES, gpu: GpuOpt = None,
           available_gib: AvailOpt = None, weights_gib: WeightsOpt = None) -> None:
    from kvledger.report.html_page import render_report

    with user_errors():
        plan, ignored = plan_from(PlanInputs(model, rules, gpu, available_gib, weights_gib),
                                  ctx.args)
        result = _simulate_if_asked(
            plan, WorkloadInputs(trace, workload, num_requests, seed, rate, time_scale),
            chunked_prefill_size, mamba_track_interval, step_overhead_ms, prefill_ms_per_token,
            decode_ms_per_token)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(render_report(plan, result, ignored), encoding="utf-8")
    console.print(f"wrote {out} ({out.stat().st_size:,} bytes)", highlight=False)
