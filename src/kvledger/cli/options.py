"""Options shared by every command that plans a model on a deployment."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import typer

from kvledger.launch import parse_flags
from kvledger.model.config import DEFAULT_MODEL, embedded_names
from kvledger.plan import Plan, make_plan
from kvledger.rules import DEFAULT_RULES, RULES
from kvledger.vllm.rules import RULES as VLLM_RULES

ModelOpt = Annotated[str | None, typer.Option(
    "--model", help=f"Embedded name ({', '.join(embedded_names())}), Hugging Face repo id, "
    f"config.json or model directory. Default: {DEFAULT_MODEL}.")]
RulesOpt = Annotated[str, typer.Option(
    "--rules", help=f"Engine rule set: {', '.join(RULES)}; for --engine vllm: "
    f"{', '.join(VLLM_RULES)}.")]
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


def plan_from(inputs: PlanInputs, extra_args: list[str], *, requests: int | None = None,
              context: int | None = None, check: bool = False) -> tuple[Plan, tuple[str, ...]]:
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


def exit_if_unfit(plan: Plan, check: bool) -> None:
    """With --check, a workload that does not fit is exit status 1 (after the output)."""
    if check and plan.workload is not None and not plan.workload.fits:
        raise typer.Exit(1)
