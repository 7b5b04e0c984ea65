"""One deployment given as one engine's flags, planned by every engine asked.

The flags are the source engine's: vLLM's when they are a pasted `vllm serve …` (or vLLM alone
is asked), else SGLang's (flags or a pasted launch command). Every engine asked plans from
them, the others through the flags both engines share (`kvledger.sizing.translate`), each by
its entry in `PLANNERS`; the same model, GPU, memory terms and workload go to each. `kvledger
plan` and the Python API's `kvledger.plan` both plan here.

>>> plans, ignored = plans_from_flags("--tp 8", (Engine.SGLANG, Engine.VLLM),
...                                   PlanAsk(gpu="H200"))
>>> [(p.engine.value, p.totals.ranks) for p in plans]
[('sglang', 8), ('vllm', 8)]
>>> plans_from_flags("vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 2", (Engine.VLLM,),
...                  PlanAsk(gpu="H200"))[0][0].fit_at(32_768).requests
126
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from kvledger.core.engines import Engine
from kvledger.core.plan import EnginePlan
from kvledger.core.terms import MemoryTerms
from kvledger.model.arch import ModelArch
from kvledger.model.config import DEFAULT_MODEL, load_model
from kvledger.sglang.launch import parse_flags
from kvledger.sglang.plan import make_plan
from kvledger.sglang.rules import DEFAULT_RULES
from kvledger.sizing.translate import sglang_from_vllm, vllm_from_sglang
from kvledger.vllm.flags import is_vllm_command, parse_vllm_command
from kvledger.vllm.plan import make_vllm_plan
from kvledger.vllm.rules import DEFAULT_VLLM_RULES


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanAsk:
    """Everything but the flags: the model, the GPU, the memory terms, each engine's rule set
    and the workload."""

    model: str | None = None  # --model (a `--model-path` in the flags must agree)
    family: str | None = None
    gpu: str | None = None
    gpu_memory_gib: float | None = None  # SGLang: a device not in the catalogue
    terms: MemoryTerms = field(default_factory=MemoryTerms)
    sglang_rules: str = DEFAULT_RULES
    vllm_rules: str = DEFAULT_VLLM_RULES
    requests: int | None = None
    context_tokens: int | None = None
    host_state_share: float | None = None  # SGLang's host-tier what-if


@dataclass(frozen=True, slots=True, kw_only=True)
class Given:
    """The deployment the flags give, in the source engine's own type."""

    engine: Engine
    deployment: Hashable
    model_ref: str | None
    ignored: tuple[str, ...]


def given_flags(flags: str | Sequence[str], engines: tuple[Engine, ...]) -> Given:
    words = flags if isinstance(flags, str) else list(flags)
    if is_vllm_command(words) or engines == (Engine.VLLM,):
        vllm = parse_vllm_command(words)
        return Given(engine=Engine.VLLM, deployment=vllm.deployment, model_ref=vllm.model_ref,
                     ignored=vllm.ignored)
    sglang = parse_flags(words)
    return Given(engine=Engine.SGLANG, deployment=sglang.deployment,
                 model_ref=sglang.model_ref, ignored=sglang.ignored)


# the deployment of one engine in another's flags: (from, to) → translation
TRANSLATE: Mapping[tuple[Engine, Engine], Callable] = {
    (Engine.SGLANG, Engine.VLLM): vllm_from_sglang,
    (Engine.VLLM, Engine.SGLANG): sglang_from_vllm,
}
# how the source's flags name the model, for the contradiction error
MODEL_FLAG = {Engine.SGLANG: "--model-path", Engine.VLLM: "the command's model"}


def _model(ask: PlanAsk, given: Given) -> ModelArch:
    for flag, ref in (("--model", ask.model), (MODEL_FLAG[given.engine], given.model_ref)):
        if ref is not None and not ref.strip():
            raise ValueError(f"{flag} {ref!r}: expected an embedded name, a repo id, a "
                             f"config.json or a model directory (omit {flag} for the default, "
                             f"{DEFAULT_MODEL})")
    if given.model_ref and ask.model and given.model_ref != ask.model:
        raise ValueError(f"--model {ask.model!r} contradicts {MODEL_FLAG[given.engine]} "
                         f"{given.model_ref!r}")
    return load_model(ask.model or given.model_ref or DEFAULT_MODEL, family=ask.family)


def _sglang(model: ModelArch, deployment: Hashable, ask: PlanAsk) -> EnginePlan:
    t = ask.terms
    return make_plan(model, deployment, rules=ask.sglang_rules, gpu=ask.gpu,
                     available_gib=t.available_gib, weights_gib=t.weights_gib,
                     gpu_memory_gib=ask.gpu_memory_gib, requests=ask.requests,
                     context_tokens=ask.context_tokens, host_state_share=ask.host_state_share)


def _vllm(model: ModelArch, deployment: Hashable, ask: PlanAsk) -> EnginePlan:
    t = ask.terms
    if ask.gpu_memory_gib is not None:
        raise ValueError("--gpu-memory-gib: vLLM's plan takes its GPU from --gpu (the "
                         "catalogue); use --available-gib with vLLM's logged figure")
    if t.gpu_memory_utilization is not None:
        chosen = deployment.gpu_memory_utilization
        if chosen is not None and chosen != t.gpu_memory_utilization:
            raise ValueError(f"--gpu-memory-utilization {t.gpu_memory_utilization:g}: the "
                             f"command says {chosen:g}; give it once")
        deployment = replace(deployment, gpu_memory_utilization=t.gpu_memory_utilization)
    if t.kv_cache_memory_bytes is not None:
        chosen = deployment.kv_cache_memory_bytes
        if chosen is not None and chosen != t.kv_cache_memory_bytes:
            raise ValueError(f"--kv-cache-memory-bytes {t.kv_cache_memory_bytes}: the command "
                             f"says {chosen}; give it once")
        deployment = replace(deployment, kv_cache_memory_bytes=t.kv_cache_memory_bytes)
    return make_vllm_plan(model, deployment, rules=ask.vllm_rules, gpu=ask.gpu,
                          available_gib=t.available_gib, weights_gib=t.weights_gib,
                          activation_gib=t.activation_gib, non_torch_gib=t.non_torch_gib,
                          cudagraph_gib=t.cudagraph_gib, requests=ask.requests,
                          context_tokens=ask.context_tokens)


PLANNERS: Mapping[Engine, Callable[[ModelArch, Hashable, PlanAsk], EnginePlan]] = {
    Engine.SGLANG: _sglang, Engine.VLLM: _vllm}
# the memory terms each engine's plan reads (`MemoryTerms`); a term no engine asked reads is
# an error, never silently ignored
READS: Mapping[Engine, frozenset[str]] = {
    Engine.SGLANG: frozenset({"weights_gib", "available_gib"}),
    Engine.VLLM: frozenset({"weights_gib", "available_gib", "activation_gib", "non_torch_gib",
                            "cudagraph_gib", "gpu_memory_utilization",
                            "kv_cache_memory_bytes"}),
}


def check_ask(ask: PlanAsk, engines: tuple[Engine, ...]) -> None:
    """Inputs that mean nothing, or something else, to an engine asked: one error each."""
    if ask.host_state_share is not None and engines != (Engine.SGLANG,):
        raise ValueError(f"--hicache-state-share {ask.host_state_share!r}: a what-if for "
                         "SGLang's host tier; not with --engine vllm")
    if len(engines) > 1 and ask.terms.available_gib is not None:
        raise ValueError("--available-gib means a different figure to each engine (SGLang: free "
                         "after weights; vLLM: Available KV cache memory); side by side needs "
                         "--gpu")
    check_terms(ask.terms, engines)


def check_terms(terms: MemoryTerms, engines: tuple[Engine, ...]) -> None:
    """A memory term no engine of `engines` reads is an error naming it."""
    unread = terms.unread_by(frozenset().union(*(READS[e] for e in engines)))
    if unread:
        raise ValueError(f"{', '.join(unread)}: vLLM's terms, not SGLang's: its (1 − "
                         "mem_fraction_static) slack covers activations and CUDA graphs (set "
                         "--mem-fraction-static), or add --engine vllm")


def plans_from_flags(flags: str | Sequence[str], engines: tuple[Engine, ...],
                     ask: PlanAsk) -> tuple[tuple[EnginePlan, ...], tuple[str, ...]]:
    """(the plans of `engines`, in that order; the flags the source engine ignored)."""
    check_ask(ask, engines)
    given = given_flags(flags, engines)
    model = _model(ask, given)
    plans = tuple(
        PLANNERS[engine](model, given.deployment if engine is given.engine
                         else TRANSLATE[(given.engine, engine)](given.deployment), ask)
        for engine in engines)
    return plans, given.ignored
