"""`simulate --prefill-replicas P --decode-replicas D [--link L]`: each role's plan, the PD
replay, the aggregated fleet on the same GPUs, and where disaggregation pays."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from kvledger.cli.app import check_finite, console, emit_json, err_console
from kvledger.cli.options.fleet import FleetInputs
from kvledger.cli.options.plan import PlanInputs, plan_from
from kvledger.cli.options.sim import SimInputs
from kvledger.cli.runners.simulation import load_inputs

if TYPE_CHECKING:
    from kvledger.sglang.plan import SglangPlan


def role_plans(inputs: PlanInputs, extra: list[str], plan: SglangPlan):
    """The prefill and decode servers' plans of the same deployment flags."""
    if plan.layout.deployment.disaggregation_mode.value != "null":
        raise ValueError("--disaggregation-mode: --prefill-replicas/--decode-replicas plan "
                         "each role themselves; give the deployment without it")
    if plan.layout.deployment.attn_dp_size > 1:
        raise ValueError("--prefill-replicas/--decode-replicas: a replica is one rank; give a "
                         "deployment without --enable-dp-attention")
    prefill, _ = plan_from(inputs, [*extra, "--disaggregation-mode", "prefill"])
    decode, _ = plan_from(inputs, [*extra, "--disaggregation-mode", "decode"])
    return prefill, decode


def run_pd(inputs: PlanInputs, extra: list[str], plan: SglangPlan, work: SimInputs,
           fleet: FleetInputs, *, json: bool, progress: bool, ignored: list[str],
           alone: dict[str, object]) -> None:
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from kvledger.report.pd_json import pd_json
    from kvledger.report.pd_view import render_pd
    from kvledger.sim.fleet.links import DEFAULT_LINK, LINKS
    from kvledger.sim.fleet.pd import DECODE_ROUTER, simulate_pd
    from kvledger.sim.fleet.pd_compare import compare_pd
    from kvledger.sim.fleet.run import simulate_fleet
    from kvledger.sim.fleet.summary import summarize

    for flag, value in alone.items():
        if value not in (None, False):
            raise ValueError(f"--prefill-replicas/--decode-replicas: runs on its own (not with "
                             f"{flag})")
    if plan.layout.deployment.enable_hierarchical_cache:
        raise ValueError("--enable-hierarchical-cache: the PD replay keeps no host tier on "
                         "either role; leave it out")
    prefill, decode = role_plans(inputs, extra, plan)
    config = work.config(plan)
    workload = load_inputs(work)
    if fleet.rate_scale is not None and fleet.rate_scale != 1:
        workload = replace(workload.stretched(1 / fleet.rate_scale),
                           name=f"{workload.name} (rate ×{fleet.rate_scale:g})")
    link = LINKS[fleet.link or DEFAULT_LINK]
    p, d = fleet.prefill_replicas or 1, fleet.decode_replicas or 1
    bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                   console=err_console, transient=True, disable=not progress)
    with bar:
        bar.add_task(f"{p} prefill + {d} decode replicas on {workload.name}", total=None)
        result = simulate_pd(prefill, decode, workload, config, prefill_replicas=p,
                             decode_replicas=d, router=fleet.router, link=link)
        bar.add_task(f"{p + d} aggregated replicas", total=None)
        agg = summarize(simulate_fleet(plan, workload, config, replicas=p + d,
                                       router=fleet.router),
                        chunk_tokens=config.chunked_prefill_tokens)
    comparison = compare_pd(result, agg, tp=plan.layout.deployment.tp_size)
    notes = (f"decode replicas routed {DECODE_ROUTER.value}; receiving a prompt's KV costs "
             "the decode server no compute; a prefill server's pages are free once its first "
             "token is sampled (the transfer's hold is not modelled)", *prefill.notes)
    doc = pd_json(comparison, workload=workload.name, router=fleet.router.value, link=link,
                  ignored_flags=tuple(ignored), notes=tuple(dict.fromkeys(notes)))
    if json:
        emit_json(doc)
        return
    check_finite(doc)
    render_pd(doc, console)
    for flag in ignored:
        console.print(f"[yellow]ignored flag: {flag}[/]")
