"""`recommend --pd`: the prefill/decode splits of --nodes for a workload of --requests R
at --context C, sized with SGLang's roles (`kvledger.sizing.pd_split`); this module checks
the options, runs the search and prints the table or the JSON document."""

from __future__ import annotations

import typer

from kvledger.cli.app import console, emit_json, user_errors
from kvledger.cli.options.plan import choose_engines
from kvledger.cli.options.terms import VllmTerms
from kvledger.model.config import DEFAULT_MODEL
from kvledger.sglang.launch import parse_flags


def recommend_pd(ctx: typer.Context, vllm: VllmTerms, requests: int, context: int,
                  gpu: str | None, model: str | None, rules: str, engine: str | None,
                  weights_gib: float | None, nodes: int | None, json: bool) -> None:
    """`recommend --pd`: the prefill/decode splits of --nodes (kvledger.sizing.pd_split)."""
    from kvledger.report.sweep_view import render_pd_splits
    from kvledger.sizing import parse_axis
    from kvledger.sizing.pd_split import pd_splits

    with user_errors():
        if requests is None or context is None:
            raise ValueError("--pd: give --requests R and --context C (the workload the decode "
                             "servers hold), or --trace/--workload with --ttft-p95-ms")
        if nodes is None:
            raise ValueError("--pd: needs --nodes N (the nodes to split)")
        gpus = parse_axis("--gpu", gpu, str) if gpu else ()
        if len(gpus) != 1:
            raise ValueError("--pd: needs one --gpu (both sides run on it)")
        choice = choose_engines(engine, rules)
        if choice.engines != ("sglang",):
            raise ValueError("--pd: splits are sized with SGLang's roles; --engine sglang only")
        parsed = parse_flags(ctx.args)
        name = model or parsed.model_ref or DEFAULT_MODEL
        result = pd_splits(name, requests=requests, context_tokens=context, gpu=gpus[0],
                           nodes=nodes, base=parsed.deployment, rules=choice.sglang_rules,
                           terms=vllm.terms(weights_gib=weights_gib))
    if json:
        emit_json(result.to_json(parsed.ignored))
    else:
        render_pd_splits(result, console)
        for flag in parsed.ignored:  # as every table command prints them
            console.print(f"ignored flag: {flag}", style="yellow", highlight=False)
        for note in result.notes:
            console.print(f"note: {note}", style="yellow", highlight=False)
    if result.best is None:
        raise typer.Exit(1)
