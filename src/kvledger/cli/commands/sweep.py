"""`kvledger sweep`, `kvledger compare`, `kvledger recommend`: many deployments of one model."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kvledger.cli.app import command, console, emit_json, user_errors
from kvledger.cli.options.plan import (
    AvailOpt,
    CheckOpt,
    ContextOpt,
    EngineChoice,
    EngineOpt,
    JsonOpt,
    ModelOpt,
    RequestsOpt,
    RulesOpt,
    WeightsOpt,
    choose_engines,
)
from kvledger.model.config import DEFAULT_MODEL
from kvledger.sglang.launch import parse_flags
from kvledger.sglang.launch.flags import BY_SPELLING
from kvledger.sglang.rules import DEFAULT_RULES

GpusOpt = Annotated[str | None, typer.Option(
    "--gpu", help="GPUs from the catalogue, comma-separated (H100,H200,B200).")]
NodesOpt = Annotated[str | None, typer.Option(
    "--nodes", help="Nodes of 8 GPUs, comma-separated; sets --tp when --tp is not swept.")]
TpOpt = Annotated[str | None, typer.Option("--tp", help="Tensor-parallel sizes (1,2,4,8).")]
DpOpt = Annotated[str | None, typer.Option(
    "--dp", help="Attention-DP sizes (1,2,8); dp > 1 turns on --enable-dp-attention.")]
ReplicasOpt = Annotated[str | None, typer.Option(
    "--replicas", help="Data-parallel replicas without DP attention (1,2,4): SGLang's "
    "--dp-size R alone, R copies of the tp group on tp × R GPUs; not with --dp > 1.")]
KvOpt = Annotated[str | None, typer.Option(
    "--kv-cache-dtype", help="KV dtypes (auto,bf16,fp8_e4m3).")]
SsmOpt = Annotated[str | None, typer.Option(
    "--mamba-ssm-dtype", help="State dtypes (float32,bfloat16).")]
CsvOpt = Annotated[Path | None, typer.Option("--csv", help="Write the rows here.",
                                              dir_okay=False)]
FigureOpt = Annotated[Path | None, typer.Option(
    "--figure", help="Draw tokens and running requests per deployment here (.svg or .png).",
    dir_okay=False)]
SIDE_HELP = ("SGLang flags of one deployment (or a pasted launch command), plus --gpu NAME "
             "and optionally --engine vllm (the same GPUs in vLLM's flags, or a pasted `vllm "
             "serve …`); flags given outside --a/--b apply to both.")


def _parser(spelling: str):
    """The flag table's parser for one value, its error saying what was expected."""
    flag = BY_SPELLING[spelling]

    def parse(text: str) -> object:
        try:
            return flag.parse(text)
        except ValueError as exc:
            raise ValueError(str(exc) or f"expected {flag.expects}") from None

    return parse


def _axes(gpu, nodes, tp, dp, kv, ssm, replicas=None):
    from kvledger.sizing import Axes, parse_axis

    kv_parse, ssm_parse = _parser("--kv-cache-dtype"), _parser("--mamba-ssm-dtype")
    integer = _parser("--tp")
    return Axes(
        gpus=parse_axis("--gpu", gpu, str) if gpu else (None,),
        nodes=parse_axis("--nodes", nodes, integer) if nodes else (None,),
        tp=parse_axis("--tp", tp, integer) if tp else (None,),
        dp=parse_axis("--dp", dp, integer) if dp else (1,),
        replicas=parse_axis("--replicas", replicas, integer) if replicas else (1,),
        kv_cache_dtype=parse_axis("--kv-cache-dtype", kv, kv_parse) if kv else (None,),
        mamba_ssm_dtype=parse_axis("--mamba-ssm-dtype", ssm, ssm_parse) if ssm else (None,))


@command(help="Plan a grid of deployments of one model (comma lists for --gpu, --nodes, --tp, "
         "--dp, --replicas, --kv-cache-dtype, --mamba-ssm-dtype, --engine): one row per "
         "deployment and engine with deployment-wide totals (GPUs, running requests, tokens, "
         "HBM per pool, binding constraint, requests per GPU). vLLM rows run the same GPUs with vLLM's flags (DP "
         "attention → --data-parallel-size engines) and need --gpu. Other SGLang flags apply "
         "to every row.")
def sweep(ctx: typer.Context, model: ModelOpt = None, rules: RulesOpt = DEFAULT_RULES,
          gpu: GpusOpt = None, nodes: NodesOpt = None, tp: TpOpt = None, dp: DpOpt = None,
          kv_cache_dtype: KvOpt = None, mamba_ssm_dtype: SsmOpt = None,
          replicas: ReplicasOpt = None, engine: EngineOpt = None, available_gib: AvailOpt = None,
          weights_gib: WeightsOpt = None, requests: RequestsOpt = None,
          context: ContextOpt = None, check: CheckOpt = False, csv: CsvOpt = None,
          figure: FigureOpt = None, json: JsonOpt = False) -> None:
    from kvledger.report.sweep_view import sweep_table, write_sweep_csv
    from kvledger.sizing import sweep as run_sweep

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
        axes = _axes(gpu, nodes, tp, dp, kv_cache_dtype, mamba_ssm_dtype, replicas)
        if axes.size() > 10_000:
            raise ValueError(f"the grid has {axes.size():,} deployments; expected at most 10,000")
        parsed = parse_flags(ctx.args)
        name = model or parsed.model_ref or DEFAULT_MODEL
        rows = run_sweep(name, axes, parsed.deployment, rules=sglang_rules,
                         available_gib=available_gib, weights_gib=weights_gib,
                         requests=requests, context_tokens=context, engines=engines,
                         vllm_rules=vllm_rules)
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
        console.print(sweep_table(f"{name}: {len(rows):,} deployments ({rows.rules})", rows))
        for note in rows.notes:
            console.print(f"note: {note}", style="yellow", highlight=False)
        for path in (csv, figure):
            if path is not None:
                console.print(f"wrote {path}", highlight=False)
    if check and not any(r.fits for r in rows):
        raise typer.Exit(1)


def _take(words: list[str], flag: str, expects: str) -> tuple[str | None, list[str]]:
    """`flag VALUE` removed from `words` (a side's own option), and its value."""
    if flag not in words:
        return None, words
    i = words.index(flag)
    if i + 1 >= len(words):
        raise ValueError(f"{flag}: expected {expects}")
    return words[i + 1], words[:i] + words[i + 2:]


def _side(text: str) -> tuple[str, str | None, list[str]]:
    """A side's engine (default sglang), its --gpu, and its other words."""
    from kvledger.core.words import split_words

    gpu, words = _take(split_words(text), "--gpu", "a GPU name")
    engine, words = _take(words, "--engine", "sglang or vllm")
    if engine not in (None, "sglang", "vllm"):
        raise ValueError(f"--engine {engine!r}: expected sglang or vllm (one per side)")
    return engine or "sglang", gpu, words


def _side_plan(text: str, common: list[str], model: str | None, choice: EngineChoice,
               available_gib: float | None, weights_gib: float | None,
               requests: int | None, context: int | None):
    from kvledger.sglang.plan import make_plan

    engine, gpu, words = _side(text)
    if engine == "vllm":
        return _vllm_side(words, common, model, choice.vllm_rules, gpu, available_gib,
                          weights_gib, context)
    parsed = parse_flags([*common, *words])
    plan = make_plan(model or parsed.model_ref or DEFAULT_MODEL, parsed.deployment,
                     rules=choice.sglang_rules,
                     gpu=gpu, available_gib=None if gpu else available_gib,
                     weights_gib=weights_gib, requests=requests, context_tokens=context)
    return plan, parsed.ignored


def _vllm_side(words: list[str], common: list[str], model: str | None, vrules: str,
               gpu: str | None, available_gib: float | None, weights_gib: float | None,
               context: int | None):
    """A side planned with vLLM's rules: a pasted `vllm serve …`, or SGLang flags on the same
    GPUs in vLLM's flags (`kvledger.sizing.vllm_point`)."""
    from kvledger.sizing.vllm_point import vllm_deployment
    from kvledger.vllm.flags import is_vllm_command, parse_vllm_command
    from kvledger.vllm.plan import make_vllm_plan

    if gpu is None:
        raise ValueError("--engine vllm: the side needs --gpu (vLLM sizes its block pool from "
                         "the GPU's memory × --gpu-memory-utilization)")
    if available_gib is not None:
        raise ValueError("--available-gib means a different figure to vLLM (its logged "
                         "Available KV cache memory); a vLLM side needs --gpu")
    if is_vllm_command(words):
        parsed = parse_vllm_command(words)
        vdep = parsed.deployment
        if context is not None:
            from dataclasses import replace

            vdep = replace(vdep, max_model_len=context)
        name, ignored = model or parsed.model_ref or DEFAULT_MODEL, parsed.ignored
    else:
        parsed = parse_flags([*common, *words])
        vdep = vllm_deployment(parsed.deployment, context)
        name, ignored = model or parsed.model_ref or DEFAULT_MODEL, parsed.ignored
    return make_vllm_plan(name, vdep, rules=vrules, gpu=gpu, weights_gib=weights_gib), ignored


@command(help="Two deployments side by side, each quantity marked when they differ. "
         + SIDE_HELP)
def compare(ctx: typer.Context,
            a: Annotated[str, typer.Option("--a", help="Deployment A. " + SIDE_HELP)],
            b: Annotated[str, typer.Option("--b", help="Deployment B.")],
            model: ModelOpt = None, rules: RulesOpt = DEFAULT_RULES,
            available_gib: AvailOpt = None, weights_gib: WeightsOpt = None,
            requests: RequestsOpt = None, context: ContextOpt = None,
            json: JsonOpt = False) -> None:
    from kvledger.report.sweep_view import compare_table
    from kvledger.sizing.compare import compare as compare_plans  # the function, not its module

    with user_errors():
        # --rules names at most one rule set per engine the two sides use
        choice = choose_engines(",".join(dict.fromkeys(_side(t)[0] for t in (a, b))), rules)
        plan_a, ignored_a = _side_plan(a, ctx.args, model, choice, available_gib, weights_gib,
                                       requests, context)
        plan_b, ignored_b = _side_plan(b, ctx.args, model, choice, available_gib, weights_gib,
                                       requests, context)
    diffs = compare_plans(plan_a, plan_b, requests=requests, context_tokens=context)
    ignored = tuple(dict.fromkeys((*ignored_a, *ignored_b)))
    if json:
        emit_json(diffs.to_json(ignored))
        return
    console.print(compare_table(diffs, f"A: {a}", f"B: {b}"))
    console.print(f"{sum(d.differs for d in diffs)} of {len(diffs)} quantities differ",
                  highlight=False)


@command(help="The cheapest deployments (fewest GPUs, then most headroom) that fit "
         "--requests R concurrent requests of --context C tokens, each with the SGLang launch "
         "command to paste, and why the other layouts fail. Other SGLang flags apply to "
         "every layout. --engine vllm (or sglang,vllm) searches vLLM's layouts of the same "
         "GPUs too, each with its `vllm serve` command.")
def recommend(ctx: typer.Context,
              requests: Annotated[int, typer.Option("--requests",
                                                    help="Concurrent requests (global).")],
              context: Annotated[int, typer.Option("--context", help="Tokens per request.")],
              gpu: GpusOpt = None, model: ModelOpt = None, rules: RulesOpt = DEFAULT_RULES,
              engine: EngineOpt = None,
              top: Annotated[int, typer.Option("--top", help="Layouts to list.")] = 5,
              json: JsonOpt = False) -> None:
    from kvledger.report.sweep_view import render_recommendations
    from kvledger.sizing import parse_axis
    from kvledger.sizing.recommend import recommend as run_recommend

    with user_errors():
        if top < 1:
            raise ValueError(f"--top {top}: expected a positive integer")
        choice = choose_engines(engine, rules)
        parsed = parse_flags(ctx.args)
        name = model or parsed.model_ref or DEFAULT_MODEL
        gpus = parse_axis("--gpu", gpu, str) if gpu else None
        rec = run_recommend(name, requests=requests, context_tokens=context, gpus=gpus,
                            base=parsed.deployment, rules=choice.sglang_rules, top=top,
                            engines=choice.engines, vllm_rules=choice.vllm_rules)
    if json:
        emit_json(rec.to_json(parsed.ignored))
    else:
        render_recommendations(rec, console)
    if rec.best is None:
        raise typer.Exit(1)
