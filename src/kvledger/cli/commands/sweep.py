"""`kvledger sweep`, `kvledger compare`, `kvledger recommend`: many deployments of one model."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Annotated

import typer

from kvledger.cli.app import command, console, emit_json, err_console, user_errors
from kvledger.cli.options.groups import option_group
from kvledger.cli.options.jobs import JobsInputs
from kvledger.cli.options.plan import (
    AvailOpt,
    CheckOpt,
    ContextOpt,
    EngineOpt,
    JsonOpt,
    ModelOpt,
    RequestsOpt,
    RulesOpt,
    WeightsOpt,
    choose_engines,
)
from kvledger.cli.options.slo import SloInputs
from kvledger.cli.options.terms import VllmTerms
from kvledger.cli.runners.compare_sides import side_engine, side_plan
from kvledger.core.engines import Engine
from kvledger.core.limits import MAX_GPUS
from kvledger.model.config import DEFAULT_MODEL
from kvledger.sglang.launch import parse_flags
from kvledger.sglang.launch.flags import BY_SPELLING
from kvledger.sglang.rules import DEFAULT_RULES

GpusOpt = Annotated[str | None, typer.Option(
    "--gpu", help="GPUs from the catalogue, comma-separated (H100,H200,B200).")]
NodesOpt = Annotated[str | None, typer.Option(
    "--nodes", "--nnodes", help="Nodes of 8 GPUs, comma-separated; sets --tp when --tp is not "
    "swept (--nnodes: SGLang's spelling).")]
TpOpt = Annotated[str | None, typer.Option("--tp", help="Tensor-parallel sizes (1,2,4,8).")]
DpOpt = Annotated[str | None, typer.Option(
    "--dp", help="Attention-DP sizes (1,2,8); dp > 1 turns on --enable-dp-attention.")]
ReplicasOpt = Annotated[str | None, typer.Option(
    "--replicas", help="Data-parallel replicas without DP attention (1,2,4): SGLang's "
    "--dp-size R alone, R copies of the tp group on tp × R GPUs; not with --dp > 1.")]
PpOpt = Annotated[str | None, typer.Option(
    "--pp-size", help="Pipeline stages (1,2,4): tp × pp GPUs a replica, over --nodes when "
    "given (tp = nodes × 8 / pp).")]
DcpOpt = Annotated[str | None, typer.Option(
    "--dcp-size", help="Decode context parallelism (1,2,4,8): shards each request's KV over "
    "the tp ranks, which it must divide; no GPUs of its own.")]
RoleOpt = Annotated[str | None, typer.Option(
    "--disaggregation-mode", help="Server roles (null,prefill,decode): each a server of a "
    "prefill/decode split, sized as SGLang sizes that role; null: aggregated.")]
KvOpt = Annotated[str | None, typer.Option(
    "--kv-cache-dtype", help="KV dtypes (auto,bf16,fp8_e4m3).")]
SsmOpt = Annotated[str | None, typer.Option(
    "--mamba-ssm-dtype", help="State dtypes (float32,bfloat16).")]
CsvOpt = Annotated[Path | None, typer.Option("--csv", help="Write the rows here.",
                                              dir_okay=False)]
FigureOpt = Annotated[Path | None, typer.Option(
    "--figure", help="Draw tokens and running requests per deployment here (.svg or .png).",
    dir_okay=False)]
NoProgressOpt = Annotated[bool, typer.Option("--no-progress", help="No progress bar on stderr.")]
SIDE_HELP = ("SGLang flags of one deployment (or a pasted launch command), plus --gpu NAME "
             "and optionally --engine vllm (the same GPUs in vLLM's flags, or a pasted `vllm "
             "serve …`); flags given outside --a/--b apply to both.")


def _print_notes(notes: tuple[str, ...]) -> None:
    for note in notes:
        console.print(f"note: {note}", style="yellow", highlight=False)


def _parser(spelling: str):
    """The flag table's parser for one value, its error saying what was expected."""
    flag = BY_SPELLING[spelling]

    def parse(text: str) -> object:
        try:
            return flag.parse(text)
        except ValueError as exc:
            raise ValueError(str(exc) or f"expected {flag.expects}") from None

    return parse


def _count(high: int):
    """An axis value: a positive integer of at most `high` (`kvledger.core.limits`)."""
    integer = _parser("--tp")

    def parse(text: str) -> int:
        value = integer(text)
        if not 1 <= value <= high:
            raise ValueError(f"expected a positive integer (at most {high:,})")
        return value

    return parse


def _axes(gpu, nodes, tp, dp, kv, ssm, replicas=None, base_tp: int = 1, *, pp=None,
          dcp=None, role=None):
    from kvledger.sizing import Axes, parse_axis
    from kvledger.sizing.axes import GPUS_PER_NODE

    kv_parse, ssm_parse = _parser("--kv-cache-dtype"), _parser("--mamba-ssm-dtype")
    gpus = _count(MAX_GPUS)
    axes = Axes(
        pp=parse_axis("--pp-size", pp, gpus) if pp else (None,),
        dcp=parse_axis("--dcp-size", dcp, gpus) if dcp else (None,),
        role=parse_axis("--disaggregation-mode", role, _parser("--disaggregation-mode"))
        if role else (None,),
        gpus=parse_axis("--gpu", gpu, str) if gpu else (None,),
        nodes=parse_axis("--nodes", nodes, _count(MAX_GPUS // GPUS_PER_NODE)) if nodes
        else (None,),
        tp=parse_axis("--tp", tp, gpus) if tp else (None,),
        dp=parse_axis("--dp", dp, gpus) if dp else (1,),
        replicas=parse_axis("--replicas", replicas, gpus) if replicas else (1,),
        kv_cache_dtype=parse_axis("--kv-cache-dtype", kv, kv_parse) if kv else (None,),
        mamba_ssm_dtype=parse_axis("--mamba-ssm-dtype", ssm, ssm_parse) if ssm else (None,))
    # Each value may be sane and the deployment still absurd: replicas × tp GPUs.
    widest = max([base_tp, *(t for t in axes.tp if t),
                  *(n * GPUS_PER_NODE for n in axes.nodes if n)])
    stages, copies = max(p or 1 for p in axes.pp), max(axes.replicas)
    if widest * stages * copies > MAX_GPUS:
        what = (f"--replicas {copies:,}: {copies:,} × {widest:,} GPUs" if stages == 1 else
                f"--replicas {copies:,} × --pp-size {stages:,}: {copies:,} × {stages:,} × "
                f"{widest:,} GPUs")
        raise ValueError(f"{what} is {widest * stages * copies:,} GPUs; expected at most "
                         f"{MAX_GPUS:,}")
    return axes


@command(help="Plan a grid of deployments of one model (comma lists for --gpu, --nodes, --tp, "
         "--dp, --replicas, --pp-size, --dcp-size, --disaggregation-mode, --kv-cache-dtype, "
         "--mamba-ssm-dtype, --engine): one row per "
         "deployment and engine with deployment-wide totals (GPUs, running requests, requests "
         "of C tokens held at once — like for like across engines, C = --context or each "
         "engine's context length — tokens, HBM pools, what runs out first at C; --json and "
         "--csv add HBM per pool, requests per GPU and the request-limit binding). vLLM rows "
         "run the same GPUs with vLLM's flags (DP attention → --data-parallel-size engines) and "
         "need --gpu. Other SGLang flags apply to every row.")
@option_group(VllmTerms, "vllm")
@option_group(JobsInputs, "jobs")
def sweep(ctx: typer.Context, vllm: VllmTerms, jobs: JobsInputs, model: ModelOpt = None,
          rules: RulesOpt = DEFAULT_RULES, gpu: GpusOpt = None, nodes: NodesOpt = None,
          tp: TpOpt = None, dp: DpOpt = None,
          kv_cache_dtype: KvOpt = None, mamba_ssm_dtype: SsmOpt = None,
          replicas: ReplicasOpt = None, pp_size: PpOpt = None, dcp_size: DcpOpt = None,
          disaggregation_mode: RoleOpt = None, engine: EngineOpt = None,
          available_gib: AvailOpt = None,
          weights_gib: WeightsOpt = None, requests: RequestsOpt = None,
          context: ContextOpt = None, check: CheckOpt = False, csv: CsvOpt = None,
          figure: FigureOpt = None, no_progress: NoProgressOpt = False,
          json: JsonOpt = False) -> None:
    from kvledger.cli.runners.run_bar import RunBar
    from kvledger.report.sweep_view import render_sweep, write_sweep_csv
    from kvledger.sizing import sweep as run_sweep
    from kvledger.sizing.flag_plans import check_terms

    with user_errors():
        choice = choose_engines(engine, rules)
        engines, sglang_rules, vllm_rules = (choice.engines, choice.sglang_rules,
                                             choice.vllm_rules)
        if "vllm" in engines and not gpu:
            raise ValueError("--engine vllm: needs --gpu (vLLM sizes its block pool from the "
                             "GPU's memory × --gpu-memory-utilization)")
        if gpu and available_gib is not None:
            raise ValueError("--gpu and --available-gib: give one, not both")
        if check and requests is None and context is None:
            raise ValueError("--check: needs a workload to check; give --requests and/or "
                             "--context")
        parsed = parse_flags(ctx.args)
        axes = _axes(gpu, nodes, tp, dp, kv_cache_dtype, mamba_ssm_dtype, replicas,
                     base_tp=parsed.deployment.tp_size, pp=pp_size, dcp=dcp_size,
                     role=disaggregation_mode)
        if axes.size() > 10_000:
            raise ValueError(f"the grid has {axes.size():,} deployments; expected at most 10,000")
        terms = vllm.terms(weights_gib=weights_gib, available_gib=available_gib)
        check_terms(terms, tuple(Engine(e) for e in engines))
        runner = jobs.runner()
        name = model or parsed.model_ref or DEFAULT_MODEL
        with RunBar(f"planning {name}", console=err_console, enabled=not no_progress,
                    rows=False) as bar:
            rows = run_sweep(name, axes, parsed.deployment, rules=sglang_rules,
                             requests=requests, context_tokens=context, engines=engines,
                             vllm_rules=vllm_rules, terms=terms, runner=runner, observer=bar)
        if csv is not None:
            write_sweep_csv(rows, csv)
        if figure is not None:
            from kvledger.report.figures.sweep_plot import sweep_figure

            memory = (f"{available_gib:g} GiB after weights" if available_gib is not None
                      else "catalogue memory − weights" if gpu else "100 GiB after weights")
            figure.parent.mkdir(parents=True, exist_ok=True)
            sweep_figure(name, rows, memory).savefig(figure)
    if json:
        emit_json(rows.to_json(parsed.ignored))
    else:
        render_sweep(f"{name}: {len(rows):,} deployments ({rows.rules})", rows, console)
        for path in (csv, figure):
            if path is not None:
                console.print(f"wrote {path}", highlight=False)
    if check and not any(r.fits for r in rows):
        raise typer.Exit(1)


@command(help="Two deployments side by side, each quantity marked when they differ, with "
         "both sides' requests of one length held at once (--context, else each side's "
         "context length). " + SIDE_HELP)
@option_group(VllmTerms, "vllm")
def compare(ctx: typer.Context, vllm: VllmTerms,
            a: Annotated[str, typer.Option("--a", help="Deployment A. " + SIDE_HELP)],
            b: Annotated[str, typer.Option("--b", help="Deployment B.")],
            model: ModelOpt = None, rules: RulesOpt = DEFAULT_RULES,
            available_gib: AvailOpt = None, weights_gib: WeightsOpt = None,
            requests: RequestsOpt = None, context: ContextOpt = None,
            json: JsonOpt = False) -> None:
    from kvledger.report.sweep_view import compare_table
    from kvledger.sizing.compare import compare as compare_plans  # the function, not its module
    from kvledger.sizing.flag_plans import check_terms

    with user_errors():
        # --rules names at most one rule set per engine the two sides use
        sides = tuple(dict.fromkeys(side_engine(t)[0] for t in (a, b)))
        choice = choose_engines(",".join(sides), rules)
        terms = vllm.terms(weights_gib=weights_gib, available_gib=available_gib)
        check_terms(terms, tuple(Engine(e) for e in sides))
        plan_a, ignored_a = side_plan(a, ctx.args, model, choice, terms, requests, context)
        plan_b, ignored_b = side_plan(b, ctx.args, model, choice, terms, requests, context)
    diffs = compare_plans(plan_a, plan_b, requests=requests, context_tokens=context)
    ignored = tuple(dict.fromkeys((*ignored_a, *ignored_b)))
    if json:
        emit_json(diffs.to_json(ignored))
        return
    console.print(compare_table(diffs, f"A: {a}", f"B: {b}"))
    console.print(f"{diffs.differences} of {len(diffs)} quantities differ", highlight=False)
    for flag in ignored:
        console.print(f"ignored flag: {flag}", style="yellow", highlight=False)
    _print_notes(diffs.notes)


@command(help="The cheapest deployments (fewest GPUs, then most headroom) that fit "
         "--requests R concurrent requests of --context C tokens, each with the SGLang launch "
         "command to paste, and why the other layouts fail. Layouts: tp, DP attention, DCP, "
         "pipeline stages on whole nodes; --nodes N: every split of exactly N nodes. Other SGLang flags apply to "
         "every layout. --engine vllm (or sglang,vllm) searches vLLM's layouts of the same "
         "GPUs too, each with its `vllm serve` command. With --trace (or --workload) and "
         "--ttft-p95-ms instead: the smallest fleet (layouts × replicas × router × host "
         "tier; GPUs, or cost with --gpu-price) whose own replay meets the SLO unsaturated, "
         "its launch commands, and why each smaller fleet fails.")
@option_group(VllmTerms, "vllm")
@option_group(JobsInputs, "jobs")
@option_group(SloInputs, "slo")
def recommend(ctx: typer.Context, vllm: VllmTerms, jobs: JobsInputs, slo: SloInputs,
              requests: Annotated[int | None, typer.Option(
                  "--requests", help="Concurrent requests (global).")] = None,
              context: Annotated[int | None, typer.Option(
                  "--context", help="Tokens per request.")] = None,
              gpu: GpusOpt = None, model: ModelOpt = None, rules: RulesOpt = DEFAULT_RULES,
              engine: EngineOpt = None, weights_gib: WeightsOpt = None,
              top: Annotated[int, typer.Option("--top", help="Layouts to list.")] = 5,
              nodes: Annotated[int | None, typer.Option(
                  "--nodes", "--nnodes", help="Only layouts of exactly N nodes of 8 GPUs "
                  "(tp 8 or 16 × pipeline stages × replicas, with DP attention or DCP): "
                  "which split of N nodes holds the workload.")] = None,
              no_progress: NoProgressOpt = False, json: JsonOpt = False) -> None:
    if slo.pd and not slo.asked:
        with user_errors():
            slo.check_unused()
        from kvledger.cli.runners.recommend_pd import recommend_pd

        recommend_pd(ctx, vllm, requests, context, gpu, model, rules, engine, weights_gib,
                     nodes, json)
        return
    from kvledger.cli.runners.run_bar import RunBar
    from kvledger.report.sweep_view import render_recommendations
    from kvledger.sizing import parse_axis
    from kvledger.sizing.flag_plans import check_terms
    from kvledger.sizing.recommend import recommend as run_recommend

    with user_errors():
        if slo.asked:
            from kvledger.cli.runners.recommend_slo import run_slo_command

            given = {"--top": top != 5, "--weights-gib": weights_gib is not None,
                     "--nodes": nodes is not None, **{"--" + f.name.replace("_", "-"):
                                           getattr(vllm, f.name) is not None
                                           for f in fields(vllm)}}
            met = run_slo_command(slo, ctx.args, model=model, gpu=gpu, rules=rules,
                                  engine=engine, requests=requests, context=context,
                                  unused=given,
                                  runner=jobs.runner(), progress=not no_progress, json=json)
            if not met:
                raise typer.Exit(1)
            return
        slo.check_unused()
        if requests is None or context is None:
            raise ValueError("recommend: give --requests R and --context C (a concurrency "
                             "check), or --trace/--workload with --ttft-p95-ms (an SLO)")
        if top < 1:
            raise ValueError(f"--top {top}: expected a positive integer")
        choice = choose_engines(engine, rules)
        terms = vllm.terms(weights_gib=weights_gib)
        # vLLM's terms also size the `vllm serve` command every SGLang fit carries
        check_terms(terms, (*(Engine(e) for e in choice.engines), Engine.VLLM))
        runner = jobs.runner()
        parsed = parse_flags(ctx.args)
        name = model or parsed.model_ref or DEFAULT_MODEL
        gpus = parse_axis("--gpu", gpu, str) if gpu else None
        with RunBar(f"planning {name}'s layouts", console=err_console,
                    enabled=not no_progress, rows=False) as bar:
            rec = run_recommend(name, requests=requests, context_tokens=context, gpus=gpus,
                                base=parsed.deployment, rules=choice.sglang_rules, top=top,
                                engines=choice.engines, vllm_rules=choice.vllm_rules,
                                terms=terms, runner=runner, observer=bar, nodes=nodes)
    if json:
        emit_json(rec.to_json(parsed.ignored))
    else:
        render_recommendations(rec, console)
        for flag in parsed.ignored:
            console.print(f"ignored flag: {flag}", style="yellow", highlight=False)
        _print_notes(rec.notes)
    if rec.best is None:
        raise typer.Exit(1)
