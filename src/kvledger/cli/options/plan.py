"""Options shared by every command that plans a model on a deployment.

`--engine` and `--rules` are declared here once for every command that takes them, and read
once (`choose_engines`): which engines plan, and each one's rule set.

>>> c = choose_engines("sglang,vllm", "vllm-0.13")
>>> c.engines, c.sglang_rules, c.vllm_rules
(('sglang', 'vllm'), 'sglang-0.5.21', 'vllm-0.13')
>>> choose_engines(None, "vllm-0.13").engines  # the rule set implies the engine
('vllm',)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated

import typer

from kvledger.model.config import DEFAULT_MODEL, embedded_names
from kvledger.sglang.launch import parse_flags
from kvledger.sglang.plan import SglangPlan, make_plan
from kvledger.sglang.rules import DEFAULT_RULES, RULES
from kvledger.sizing.axes import parse_axis
from kvledger.vllm.flags import is_vllm_command
from kvledger.vllm.rules import DEFAULT_VLLM_RULES
from kvledger.vllm.rules import RULES as VLLM_RULES

ENGINES = ("sglang", "vllm")

ModelOpt = Annotated[str | None, typer.Option(
    "--model", help=f"Embedded name ({', '.join(embedded_names())}), Hugging Face repo id, "
    f"config.json or model directory. Default: {DEFAULT_MODEL}.")]
RulesOpt = Annotated[str, typer.Option(
    "--rules", help=f"Engine rule set: {', '.join(RULES)}; for --engine vllm: "
    f"{', '.join(VLLM_RULES)}.")]
EngineOpt = Annotated[str | None, typer.Option(
    "--engine", help="Engines, comma-separated: sglang, vllm, or sglang,vllm for both side by "
    "side. Default: implied by --rules or the pasted command, else sglang.")]
GpuOpt = Annotated[str | None, typer.Option(
    "--gpu", help="GPU from the catalogue (see `kvledger gpus`); weights are subtracted.")]
FamilyOpt = Annotated[str | None, typer.Option(
    "--family", help="Read the config with this family's adapter whatever its model_type "
    "(a renamed fine-tune); see `kvledger models`.")]
GpuMemOpt = Annotated[float | None, typer.Option(
    "--gpu-memory-gib", help="Total memory per GPU as the driver reports it (GiB), for a GPU not "
    "in the catalogue or to override --gpu's; SGLang's auto mem_fraction_static follows it.")]
AvailOpt = Annotated[float | None, typer.Option(
    "--available-gib", help="Free memory per rank after weights, as SGLang logs it (GiB).")]
WeightsOpt = Annotated[float | None, typer.Option(
    "--weights-gib", help="Weights per rank (GiB). With --gpu they are subtracted (default: "
    "estimated from the config); with --available-gib they only scale the "
    "(1 − mem_fraction_static) slack (default 0).")]
RequestsOpt = Annotated[int | None, typer.Option(
    "--requests", help="Workload check: concurrent requests (global; default 1 when only "
    "--context is given).")]
ContextOpt = Annotated[int | None, typer.Option(
    "--context", help="Workload check: tokens per request (default: the context length).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables (one "
                                        "envelope for every command; see the README).")]
StateShareOpt = Annotated[float | None, typer.Option(
    "--hicache-state-share", help="What-if, not an SGLang flag: the share (0-1) of the host "
    "budget (--hicache-ratio or --hicache-size) given to state slots, the rest to KV; "
    "default SGLang's sizing. Needs --enable-hierarchical-cache.")]
CheckOpt = Annotated[bool, typer.Option(
    "--check", help="Exit with status 1 when the workload (--requests/--context) does not fit.")]


@dataclass(frozen=True, slots=True)
class PlanInputs:
    """The model and memory options every planning command takes (see cli.groups)."""

    model: ModelOpt = None
    rules: RulesOpt = DEFAULT_RULES
    gpu: GpuOpt = None
    gpu_memory_gib: GpuMemOpt = None
    family: FamilyOpt = None
    available_gib: AvailOpt = None
    weights_gib: WeightsOpt = None
    hicache_state_share: StateShareOpt = None


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineChoice:
    """The engines a command plans with (in the order given) and each one's rule set."""

    engines: tuple[str, ...]
    sglang_rules: str
    vllm_rules: str


def _engine(word: str) -> str:
    if word not in ENGINES:
        raise ValueError("expected sglang or vllm, or both as sglang,vllm")
    return word


def choose_engines(engine: str | None, rules: str, extra: Sequence[str] = ()) -> EngineChoice:
    """`--engine` (else the engine `--rules` or a pasted `vllm serve …` in `extra` implies,
    else SGLang) and `--rules`: at most one rule set per engine, each of an engine chosen
    (SGLang's default rule set, the option's default, names no engine)."""
    if engine is not None:
        engines = parse_axis("--engine", engine, _engine)
    elif rules in VLLM_RULES or is_vllm_command(list(extra)):
        engines = ("vllm",)
    else:
        engines = ("sglang",)
    chosen: dict[str, list[str]] = {"sglang": [], "vllm": []}
    for word in (w.strip() for w in rules.split(",")):
        owner = "sglang" if word in RULES else "vllm" if word in VLLM_RULES else None
        if owner is None:
            raise ValueError(f"--rules {word!r}: expected one of "
                             f"{', '.join([*RULES, *VLLM_RULES])}")
        if owner not in engines and word != DEFAULT_RULES:
            raise ValueError(f"--rules {word}: a {owner} rule set, but --engine is "
                             f"{','.join(engines)}")
        chosen[owner].append(word)
    for owner, words in chosen.items():
        if len(words) > 1:
            raise ValueError(f"--rules {rules!r}: two rule sets for {owner}")
    return EngineChoice(engines=engines,
                        sglang_rules=(chosen["sglang"] or [DEFAULT_RULES])[0],
                        vllm_rules=(chosen["vllm"] or [DEFAULT_VLLM_RULES])[0])


def plan_from(inputs: PlanInputs, extra_args: list[str], *, requests: int | None = None,
              context: int | None = None, check: bool = False) -> tuple[SglangPlan, tuple[str, ...]]:
    """Build the plan from kvledger options plus SGLang flags / a pasted launch command."""
    if check and requests is None and context is None:
        raise ValueError("--check: needs a workload to check; give --requests and/or --context")
    parsed = parse_flags(extra_args)
    model = inputs.model
    for flag, ref in (("--model", model), ("--model-path", parsed.model_ref)):
        if ref is not None and not ref.strip():
            raise ValueError(f"{flag} {ref!r}: expected an embedded name, a repo id, a "
                             f"config.json or a model directory (omit {flag} for the default, "
                             f"{DEFAULT_MODEL})")
    if parsed.model_ref and model and parsed.model_ref != model:
        raise ValueError(f"--model {model!r} contradicts --model-path {parsed.model_ref!r}")
    plan = make_plan(
        model or parsed.model_ref or DEFAULT_MODEL, parsed.deployment, rules=inputs.rules,
        gpu=inputs.gpu, available_gib=inputs.available_gib, weights_gib=inputs.weights_gib,
        gpu_memory_gib=inputs.gpu_memory_gib, family=inputs.family,
        requests=requests, context_tokens=context, host_state_share=inputs.hicache_state_share,
    )
    return plan, parsed.ignored


def exit_if_unfit(plan: SglangPlan, check: bool) -> None:
    """With --check, a workload that does not fit is exit status 1 (after the output)."""
    if check and plan.workload is not None and not plan.workload.fits:
        raise typer.Exit(1)
