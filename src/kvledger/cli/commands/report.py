"""`kvledger figures` and `kvledger report`: pictures and a self-contained HTML page."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kvledger.cli.app import command, command_line, console, emit_json, user_errors
from kvledger.cli.options.groups import option_group
from kvledger.cli.options.plan import ContextOpt, JsonOpt, PlanInputs, RequestsOpt, plan_from
from kvledger.cli.options.sim import SimInputs
from kvledger.cli.runners.simulation import run_simulation

if TYPE_CHECKING:
    from kvledger.sglang.plan import SglangPlan
    from kvledger.sim.replay import SimResult

HELP_TAIL = (" With --trace or --workload a simulation runs too. SGLang deployment flags may "
             "follow, as for `kvledger plan`.")


def _simulate_if_asked(plan: SglangPlan, sim: SimInputs) -> SimResult | None:
    return run_simulation(plan, sim, progress=True) if sim.asked else None


@command(help="Draw the article's five figures for a model and deployment (SVG and PNG)."
         + HELP_TAIL)
@option_group(PlanInputs, "inputs")
@option_group(SimInputs, "sim")
def figures(ctx: typer.Context, inputs: PlanInputs, sim: SimInputs,
            out: Annotated[Path, typer.Option("--out", help="Directory for the files.",
                                              file_okay=False)] = Path("figures"),
            json: JsonOpt = False) -> None:
    from kvledger.core.envelope import envelope
    from kvledger.report.figures import write_figures

    with user_errors():
        plan, ignored = plan_from(inputs, ctx.args)
        result = _simulate_if_asked(plan, sim)
        files, skipped = write_figures(plan, out, result)
    if json:
        emit_json(envelope("figures", {"out": str(out), "files": [str(p) for p in files],
                                       "skipped": skipped},
                           ignored_flags=ignored, notes=plan.notes))
        return
    for path in files:
        console.print(str(path), highlight=False)
    for reason in skipped:
        console.print(f"[yellow]skipped {reason}[/]")


@command(help="One self-contained HTML page: every plan table (ledgers, capacity, workload "
         "check with --requests/--context, host tier), figures and simulation results, with "
         "the version, command line and date."
         + HELP_TAIL)
@option_group(PlanInputs, "inputs")
@option_group(SimInputs, "sim")
def report(ctx: typer.Context, inputs: PlanInputs, sim: SimInputs,
           out: Annotated[Path, typer.Option("--out", help="The HTML file to write.",
                                             dir_okay=False)] = Path("report.html"),
           requests: RequestsOpt = None, context: ContextOpt = None,
           json: JsonOpt = False) -> None:
    from kvledger.core.envelope import envelope
    from kvledger.report.html_page import Provenance, render_report

    with user_errors():
        plan, ignored = plan_from(inputs, ctx.args, requests=requests, context=context)
        result = _simulate_if_asked(plan, sim)
        out.parent.mkdir(parents=True, exist_ok=True)
        page = render_report(plan, result, ignored, Provenance.now(command_line(ctx)))
        out.write_text(page, encoding="utf-8")
    if json:
        emit_json(envelope("report", {"out": str(out), "bytes": out.stat().st_size,
                                      "workload_fits": plan.workload.fits if plan.workload
                                      else None}, ignored_flags=ignored, notes=plan.notes))
        return
    console.print(f"wrote {out} ({out.stat().st_size:,} bytes)", highlight=False)
