"""The two sides of `kvledger compare`: each one deployment, SGLang's or vLLM's.

A side is SGLang flags (or a pasted launch command) plus its own `--gpu`, and `--engine vllm`
to plan it with vLLM's rules: SGLang flags on the same GPUs in vLLM's flags
(`kvledger.sizing.vllm_point`) or a pasted `vllm serve …`. Both go through the engines'
planners (`kvledger.sizing.engines`, `kvledger.sizing.flag_plans`), so a side is an
`EnginePlan` whichever engine made it; `--context` is a vLLM side's max_model_len, as in
sweeps.
"""

from __future__ import annotations

from kvledger.cli.options.plan import EngineChoice
from kvledger.core.engines import Engine
from kvledger.core.terms import MemoryTerms
from kvledger.model.config import DEFAULT_MODEL
from kvledger.sglang.launch import parse_flags


def _take(words: list[str], flag: str, expects: str) -> tuple[str | None, list[str]]:
    """`flag VALUE` removed from `words` (a side's own option), and its value."""
    if flag not in words:
        return None, words
    i = words.index(flag)
    if i + 1 >= len(words):
        raise ValueError(f"{flag}: expected {expects}")
    return words[i + 1], words[:i] + words[i + 2:]


def side_engine(text: str) -> tuple[str, str | None, list[str]]:
    """A side's engine (default sglang), its --gpu, and its other words."""
    from kvledger.core.words import split_words

    gpu, words = _take(split_words(text), "--gpu", "a GPU name")
    engine, words = _take(words, "--engine", "sglang or vllm")
    if engine not in (None, "sglang", "vllm"):
        raise ValueError(f"--engine {engine!r}: expected sglang or vllm (one per side)")
    return engine or "sglang", gpu, words


def side_plan(text: str, common: list[str], model: str | None, choice: EngineChoice,
              terms: MemoryTerms, requests: int | None, context: int | None):
    """One side's plan: SGLang flags (or a pasted launch command), or with --engine vllm a
    pasted `vllm serve …` or SGLang flags on the same GPUs in vLLM's flags
    (`kvledger.sizing.vllm_point`); both through the engines' point planners."""
    from kvledger.sizing.axes import Point
    from kvledger.sizing.engines import plan_point
    from kvledger.vllm.flags import is_vllm_command

    engine, gpu, words = side_engine(text)
    if engine == "vllm":
        if gpu is None:
            raise ValueError("--engine vllm: the side needs --gpu (vLLM sizes its block pool "
                             "from the GPU's memory × --gpu-memory-utilization)")
        if terms.available_gib is not None:
            raise ValueError("--available-gib means a different figure to vLLM (its logged "
                             "Available KV cache memory); a vLLM side needs --gpu")
        if is_vllm_command(words):
            return _pasted_vllm(words, model, choice.vllm_rules, gpu, terms, requests, context)
    parsed = parse_flags([*common, *words])
    name = model or parsed.model_ref or DEFAULT_MODEL
    point = Point(gpu=gpu, nodes=1, deployment=parsed.deployment)
    rules = choice.vllm_rules if engine == "vllm" else choice.sglang_rules
    plan = plan_point(Engine(engine), name, point, rules=rules, terms=terms,
                      workload=(requests, context))
    return plan, parsed.ignored


def _pasted_vllm(words: list[str], model: str | None, vrules: str, gpu: str,
                 terms: MemoryTerms, requests: int | None, context: int | None):
    """A vLLM side given as `vllm serve …`: its flags, --context as its max_model_len (as in
    sweeps), planned by vLLM's entry of `kvledger.sizing.flag_plans.PLANNERS`."""
    from dataclasses import replace

    from kvledger.model.config import load_model
    from kvledger.sizing.flag_plans import PLANNERS, PlanAsk
    from kvledger.vllm.flags import parse_vllm_command

    parsed = parse_vllm_command(words)
    vdep = parsed.deployment
    if context is not None:
        vdep = replace(vdep, max_model_len=context)
    ask = PlanAsk(gpu=gpu, terms=terms, vllm_rules=vrules, requests=requests,
                  context_tokens=context)
    arch = load_model(model or parsed.model_ref or DEFAULT_MODEL)
    return PLANNERS[Engine.VLLM](arch, vdep, ask), parsed.ignored
