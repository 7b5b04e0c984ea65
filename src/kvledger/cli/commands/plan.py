"""`kvledger plan`, `kvledger explain`, `kvledger models`, `kvledger gpus`."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from kvledger.cli.app import command, console, emit_json, user_errors
from kvledger.cli.options.groups import option_group
from kvledger.cli.options.plan import (
    CheckOpt,
    ContextOpt,
    JsonOpt,
    PlanInputs,
    RequestsOpt,
    plan_from,
)
from kvledger.cli.runners.engines import EngineInputs, plans_for
from kvledger.sglang.launch import flags_help

DEPLOY_HELP = (
    "SGLang deployment flags may follow (e.g. --tp 8 --dp 8 --enable-dp-attention "
    "--kv-cache-dtype fp8_e4m3), or a whole launch command after `--`: "
    "kvledger plan -- python -m sglang.launch_server --model-path zai-org/GLM-5.3-Flash --tp 8."
)
VLLM_HELP = (
    " With --engine vllm (or --rules vllm-…), vLLM flags or a pasted `vllm serve MODEL …` / "
    "`python -m vllm.entrypoints.openai.api_server …` command; --engine sglang,vllm plans both "
    "side by side."
)


L3SizeOpt = Annotated[float | None, typer.Option(
    "--l3-size", help="GiB of a store tier below host (local dir, Redis or Mooncake Store): "
    "shows objects and bytes per tree node per backend and the DRAM per instance.")]
L3InstancesOpt = Annotated[int, typer.Option(
    "--l3-instances", help="Engine instances sharing the store (Mooncake: each mounts a share).")]
L3NodePagesOpt = Annotated[int, typer.Option(
    "--l3-node-pages", help="Pages per tree node (one state object per node).")]


@command(help="Ledgers and capacity plan for a model on a deployment. " + DEPLOY_HELP
         + VLLM_HELP, epilog=flags_help())
@option_group(PlanInputs, "inputs")
@option_group(EngineInputs, "engine")
def plan(ctx: typer.Context, inputs: PlanInputs, engine: EngineInputs,
         requests: RequestsOpt = None, context: ContextOpt = None, check: CheckOpt = False,
         json: JsonOpt = False, l3_size: L3SizeOpt = None, l3_instances: L3InstancesOpt = 1,
         l3_node_pages: L3NodePagesOpt = 1) -> None:
    from kvledger.report.plan_views import render_any
    from kvledger.report.side_by_side import render_side_by_side, side_by_side_json

    with user_errors():
        if check and requests is None and context is None:
            raise ValueError("--check: needs a workload to check; give --requests and/or "
                             "--context")
        plans, ignored = plans_for(inputs, engine, ctx.args, requests=requests,
                                   context=context)
        l3 = None if l3_size is None else _l3(plans, l3_size, l3_instances, l3_node_pages)
    if len(plans) > 1:
        if json:
            emit_json(side_by_side_json(plans, ignored))
        else:
            render_side_by_side(plans, console)
    elif json:
        doc = plans[0].to_json(ignored)
        if l3 is not None:
            from kvledger.report.l3_view import l3_json
            doc["l3"] = l3_json(l3)
        emit_json(doc)
    else:
        render_any(plans[0], console, ignored)
        if l3 is not None:
            from kvledger.report.l3_view import render_l3
            render_l3(l3, console)
    if check and any(p.fits(requests, context) is False for p in plans):
        raise typer.Exit(1)


def _l3(plans, size_gib: float, instances: int, node_pages: int):
    """SGLang's store tier below host for the one plan: it needs per-token and per-state-slot
    ledgers (vLLM's plan has per-block ones, and no store tier in kvledger)."""
    from math import isfinite

    from kvledger.core.units import GiB
    from kvledger.sglang.l3plan import plan_l3

    if not isfinite(size_gib) or size_gib <= 0 or size_gib > 2**40:
        raise ValueError(f"--l3-size {size_gib}: expected a positive number of GiB")
    ledgers = plans[0].ledgers_by_name() if len(plans) == 1 else {}
    if not {"per_token", "per_state_slot"} <= set(ledgers):
        raise ValueError("--l3-size: sizes SGLang's store tier from its per-token and "
                         "per-state-slot ledgers; plan one SGLang deployment (--engine sglang)")
    return plan_l3(plans[0].page_tokens, token_bytes=ledgers["per_token"].total_bytes,
                   state_bytes=ledgers["per_state_slot"].total_bytes,
                   l3_bytes=int(size_gib * GiB), instances=instances, node_pages=node_pages)


@command(help="Each number of the plan as a derivation line, after the assumptions it rests "
         "on. " + DEPLOY_HELP)
@option_group(PlanInputs, "inputs")
def explain(ctx: typer.Context, inputs: PlanInputs, requests: RequestsOpt = None,
            context: ContextOpt = None, json: JsonOpt = False) -> None:
    from kvledger.core.envelope import envelope
    from kvledger.report.explain import explain as explain_lines
    from kvledger.sglang.plan_json import plan_notes

    with user_errors():
        result, ignored = plan_from(inputs, ctx.args, requests=requests, context=context)
    lines, notes = explain_lines(result), plan_notes(result)
    if json:
        emit_json(envelope("explain", {"model": result.model.name,
                                       "rules": result.layout.rules.name, "lines": lines},
                           ignored_flags=ignored, notes=notes))
        return
    for note in notes:
        console.print(f"assumed: {note}", style="yellow", highlight=False)
    for line in lines:
        console.print(line, highlight=False)
    for flag in ignored:
        console.print(f"ignored flag: {flag}", style="yellow", highlight=False)


@command(help="Embedded models and their families.", deployment=False)
def models(json: JsonOpt = False) -> None:
    from kvledger.model.config import REPO_IDS, embedded_names, load_model

    rows = []
    for name in embedded_names():
        arch = load_model(name)
        rows.append({"name": name, "repo_id": REPO_IDS.get(name), "family": arch.family.value,
                     "model_type": arch.model_type, "layers": arch.num_layers,
                     "full_layers": arch.num_full_layers, "linear_layers": arch.num_linear_layers,
                     "attention": arch.attn.value,
                     "linear": arch.state.kind.value if arch.state else None})
    if json:
        from kvledger.core.envelope import envelope

        emit_json(envelope("models", {"models": rows}))
        return
    table = Table(title="Embedded models")
    for col in ("name", "repo_id", "family", "layers", "full", "linear"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["name"], r["repo_id"] or "", r["family"], str(r["layers"]),
                      f"{r['full_layers']} {r['attention']}",
                      f"{r['linear_layers']} {r['linear'] or ''}")
    console.print(table)


@command(help="The GPU catalogue used by --gpu.", deployment=False)
def gpus(json: JsonOpt = False) -> None:
    from kvledger.core.gpus import CATALOGUE

    if json:
        from kvledger.core.envelope import envelope

        emit_json(envelope("gpus", {"gpus": [
            {"name": g.name, "memory_bytes": g.memory_bytes, "arch": g.arch.value}
            for g in CATALOGUE.values()]}))
        return
    table = Table(title="GPU catalogue")
    for col in ("name", "memory bytes", "GiB", "arch"):
        table.add_column(col)
    for g in CATALOGUE.values():
        table.add_row(g.name, f"{g.memory_bytes:,}", f"{g.memory_bytes / 2**30:,.2f}", g.arch.value)
    console.print(table)
