"""`--engine sglang|vllm|sglang,vllm` for `kvledger plan`: the plans of the engines chosen.

The engine is the one named, else the one the rule set or a pasted command implies
(`--rules vllm-0.13`, `-- vllm serve …`), else SGLang (`cli.options.choose_engines`, which
every command taking `--engine` shares). The flags given are one engine's, the source: vLLM's
when a vLLM command is pasted or vLLM alone is chosen, else SGLang's. Every engine chosen plans
from them, the others through the flags both engines share (kvledger.sizing.translate), each
by its entry in `PLANNERS`; the same model, GPU and memory terms go to each.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Annotated

import typer

from kvledger.cli.options.plan import EngineChoice, EngineOpt, PlanInputs, choose_engines
from kvledger.core.engines import Engine
from kvledger.core.plan import EnginePlan
from kvledger.model.arch import ModelArch
from kvledger.model.config import DEFAULT_MODEL, load_model
from kvledger.sglang.launch import parse_flags
from kvledger.sglang.plan import make_plan
from kvledger.sizing.translate import sglang_from_vllm, vllm_from_sglang
from kvledger.vllm.flags import is_vllm_command, parse_vllm_command
from kvledger.vllm.plan import make_vllm_plan

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


@dataclass(frozen=True, slots=True, kw_only=True)
class Given:
    """The deployment the command line gives, in its source engine's flags."""

    engine: Engine
    deployment: Hashable
    model_ref: str | None
    ignored: tuple[str, ...]


def _given(extra: list[str], engines: tuple[Engine, ...]) -> Given:
    if is_vllm_command(extra) or engines == (Engine.VLLM,):
        vllm = parse_vllm_command(extra)
        return Given(engine=Engine.VLLM, deployment=vllm.deployment, model_ref=vllm.model_ref,
                     ignored=vllm.ignored)
    sglang = parse_flags(extra)
    return Given(engine=Engine.SGLANG, deployment=sglang.deployment,
                 model_ref=sglang.model_ref, ignored=sglang.ignored)


# the deployment of one engine in another's flags: (from, to) → translation
TRANSLATE: Mapping[tuple[Engine, Engine], Callable] = {
    (Engine.SGLANG, Engine.VLLM): vllm_from_sglang,
    (Engine.VLLM, Engine.SGLANG): sglang_from_vllm,
}
# how the source's flags name the model, for the contradiction error
MODEL_FLAG = {Engine.SGLANG: "--model-path", Engine.VLLM: "the command's model"}


def _model(inputs: PlanInputs, given: Given) -> ModelArch:
    for flag, ref in (("--model", inputs.model), (MODEL_FLAG[given.engine], given.model_ref)):
        if ref is not None and not ref.strip():
            raise ValueError(f"{flag} {ref!r}: expected an embedded name, a repo id, a "
                             f"config.json or a model directory (omit {flag} for the default, "
                             f"{DEFAULT_MODEL})")
    if given.model_ref and inputs.model and given.model_ref != inputs.model:
        raise ValueError(f"--model {inputs.model!r} contradicts {MODEL_FLAG[given.engine]} "
                         f"{given.model_ref!r}")
    return load_model(inputs.model or given.model_ref or DEFAULT_MODEL, family=inputs.family)


@dataclass(frozen=True, slots=True, kw_only=True)
class Request:
    """Everything one engine's planner is given, whichever engine it is."""

    model: ModelArch
    inputs: PlanInputs
    engine_inputs: EngineInputs
    choice: EngineChoice
    requests: int | None
    context: int | None


def _sglang(deployment: Hashable, r: Request) -> EnginePlan:
    i = r.inputs
    return make_plan(r.model, deployment, rules=r.choice.sglang_rules, gpu=i.gpu,
                     available_gib=i.available_gib, weights_gib=i.weights_gib,
                     gpu_memory_gib=i.gpu_memory_gib, requests=r.requests,
                     context_tokens=r.context, host_state_share=i.hicache_state_share)


def _vllm(deployment: Hashable, r: Request) -> EnginePlan:
    i, e = r.inputs, r.engine_inputs
    if i.gpu_memory_gib is not None:
        raise ValueError("--gpu-memory-gib: vLLM's plan takes its GPU from --gpu (the "
                         "catalogue); use --available-gib with vLLM's logged figure")
    return make_vllm_plan(r.model, deployment, rules=r.choice.vllm_rules, gpu=i.gpu,
                          available_gib=i.available_gib, weights_gib=i.weights_gib,
                          activation_gib=e.activation_gib, non_torch_gib=e.non_torch_gib,
                          cudagraph_gib=e.cudagraph_gib)


PLANNERS: Mapping[Engine, Callable[[Hashable, Request], EnginePlan]] = {
    Engine.SGLANG: _sglang, Engine.VLLM: _vllm}


def _check(inputs: PlanInputs, eng: EngineInputs, engines: tuple[Engine, ...],
           requests: int | None, context: int | None) -> None:
    """Inputs that mean nothing, or something else, to an engine chosen: one error each."""
    if inputs.hicache_state_share is not None and engines != (Engine.SGLANG,):
        raise ValueError(f"--hicache-state-share {inputs.hicache_state_share!r}: a what-if for "
                         "SGLang's host tier; not with --engine vllm")
    if Engine.VLLM in engines and (requests is not None or context is not None):
        raise ValueError("--requests/--context: the workload check is SGLang's; with --engine "
                         "vllm, concurrency is reported for max_model_len requests")
    if len(engines) > 1 and inputs.available_gib is not None:
        raise ValueError("--available-gib means a different figure to each engine (SGLang: free "
                         "after weights; vLLM: Available KV cache memory); side by side needs "
                         "--gpu")
    if Engine.VLLM not in engines:
        given = [f for f, v in (("--activation-gib", eng.activation_gib),
                                ("--non-torch-gib", eng.non_torch_gib),
                                ("--cudagraph-gib", eng.cudagraph_gib)) if v is not None]
        if given:
            raise ValueError(f"{', '.join(given)}: vLLM's profiled terms; SGLang's "
                             "(1 − mem_fraction_static) slack covers activations and CUDA "
                             "graphs (set --mem-fraction-static), or add --engine vllm")


def plans_for(inputs: PlanInputs, eng: EngineInputs, extra: list[str], *,
              requests: int | None = None, context: int | None = None
              ) -> tuple[tuple[EnginePlan, ...], tuple[str, ...]]:
    """(the plans of the engines chosen, in --engine order; the flags ignored)."""
    choice = choose_engines(eng.engine, inputs.rules, extra)
    engines = tuple(Engine(e) for e in choice.engines)
    _check(inputs, eng, engines, requests, context)
    given = _given(extra, engines)
    request = Request(model=_model(inputs, given), inputs=inputs, engine_inputs=eng,
                      choice=choice, requests=requests, context=context)
    plans = tuple(
        PLANNERS[engine](given.deployment if engine is given.engine
                         else TRANSLATE[(given.engine, engine)](given.deployment), request)
        for engine in engines)
    return plans, given.ignored
