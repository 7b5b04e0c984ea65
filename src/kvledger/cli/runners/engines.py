"""`--engine sglang|vllm|sglang,vllm` for `kvledger plan`: the plans of the engines chosen.

The engine is the one named, else the one the rule set or a pasted command implies
(`--rules vllm-0.13`, `-- vllm serve …`), else SGLang (`cli.options.choose_engines`, which
every command taking `--engine` shares). With both engines, the flags given are
the named engine's (SGLang's unless a vLLM command is pasted) and the shared ones carry over to
the other (kvledger.sizing.translate).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import typer

from kvledger.cli.options.plan import EngineChoice, EngineOpt, PlanInputs, choose_engines, plan_from
from kvledger.model.config import DEFAULT_MODEL
from kvledger.sglang.launch import parse_flags
from kvledger.sglang.plan import Plan, make_plan
from kvledger.sizing.translate import sglang_from_vllm, vllm_from_sglang
from kvledger.vllm.flags import is_vllm_command, parse_vllm_command
from kvledger.vllm.plan import VllmPlan, make_vllm_plan

ActivationOpt = Annotated[float | None, typer.Option(
    "--activation-gib", help="vLLM: peak activation memory per rank (GiB), as profiling finds it.")]
NonTorchOpt = Annotated[float | None, typer.Option(
    "--non-torch-gib", help="vLLM: non-torch memory per rank (GiB): NCCL, CUDA context.")]
CudagraphOpt = Annotated[float | None, typer.Option(
    "--cudagraph-gib", help="vLLM: CUDA-graph memory estimate per rank (GiB), subtracted from "
    "0.21 on.")]


@dataclass(frozen=True, slots=True)
class EngineInputs:
    engine: EngineOpt = None
    activation_gib: ActivationOpt = None
    non_torch_gib: NonTorchOpt = None
    cudagraph_gib: CudagraphOpt = None


def vllm_plan_from(inputs: PlanInputs, eng: EngineInputs, choice: EngineChoice,
                   extra: list[str]) -> tuple[VllmPlan, tuple[str, ...]]:
    parsed = parse_vllm_command(extra)
    if parsed.model_ref and inputs.model and parsed.model_ref != inputs.model:
        raise ValueError(f"--model {inputs.model!r} contradicts the command's model "
                         f"{parsed.model_ref!r}")
    plan = make_vllm_plan(inputs.model or parsed.model_ref or DEFAULT_MODEL, parsed.deployment,
                          rules=choice.vllm_rules, gpu=inputs.gpu,
                          available_gib=inputs.available_gib, weights_gib=inputs.weights_gib,
                          activation_gib=eng.activation_gib, non_torch_gib=eng.non_torch_gib,
                          cudagraph_gib=eng.cudagraph_gib)
    return plan, parsed.ignored


def plans_for(inputs: PlanInputs, eng: EngineInputs, extra: list[str], *,
              requests: int | None = None, context: int | None = None
              ) -> tuple[Plan | None, VllmPlan | None, tuple[str, ...]]:
    """(SGLang plan, vLLM plan, ignored flags); the engine not asked for is None."""
    choice = choose_engines(eng.engine, inputs.rules, extra)
    engines = choice.engines
    if inputs.hicache_state_share is not None and engines != ("sglang",):
        raise ValueError(f"--hicache-state-share {inputs.hicache_state_share!r}: a what-if for "
                         "SGLang's host tier; not with --engine vllm")
    if engines == ("sglang",):
        plan, ignored = plan_from(inputs, extra, requests=requests, context=context)
        return plan, None, ignored
    if requests is not None or context is not None:
        raise ValueError("--requests/--context: the workload check is SGLang's; with --engine "
                         "vllm, concurrency is reported for max_model_len requests")
    if engines == ("vllm",):
        plan, ignored = vllm_plan_from(inputs, eng, choice, extra)
        return None, plan, ignored
    if inputs.available_gib is not None:
        raise ValueError("--available-gib means a different figure to each engine (SGLang: free "
                         "after weights; vLLM: Available KV cache memory); side by side needs "
                         "--gpu")
    sglang_rules = choice.sglang_rules
    if is_vllm_command(extra):
        vplan, ignored = vllm_plan_from(inputs, eng, choice, extra)
        splan = make_plan(vplan.model, sglang_from_vllm(parse_vllm_command(extra).deployment),
                          rules=sglang_rules, gpu=inputs.gpu, weights_gib=inputs.weights_gib)
        return splan, vplan, ignored
    parsed = parse_flags(extra)
    model = inputs.model or parsed.model_ref or DEFAULT_MODEL
    splan = make_plan(model, parsed.deployment, rules=sglang_rules, gpu=inputs.gpu,
                      weights_gib=inputs.weights_gib)
    vplan = make_vllm_plan(splan.model, vllm_from_sglang(parsed.deployment),
                           rules=choice.vllm_rules, gpu=inputs.gpu,
                           weights_gib=inputs.weights_gib, activation_gib=eng.activation_gib,
                           non_torch_gib=eng.non_torch_gib, cudagraph_gib=eng.cudagraph_gib)
    return splan, vplan, parsed.ignored
