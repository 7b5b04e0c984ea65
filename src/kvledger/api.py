"""The Python API: `kvledger.plan`, `kvledger.simulate`, `kvledger.sweep`, `kvledger.compare`
and `kvledger.recommend`, the same calls the command line makes.

Deployments are given the way the engine is launched: SGLang flags as one string or a list
(`"--tp 8 --dp 8 --enable-dp-attention"`) or a whole pasted launch command, or with
`engine="vllm"` vLLM's flags or a pasted `vllm serve …` (which implies vLLM). Memory is one
of `gpu=` (a catalogue GPU, weights subtracted) or `available_gib=` (the engine's logged
figure: SGLang's free memory after weights, vLLM's Available KV cache memory); for SGLang with
neither, 100 GiB after weights is assumed. Every term a user may know better is a keyword
(`weights_gib`, vLLM's `activation_gib`, `non_torch_gib`, `cudagraph_gib`,
`gpu_memory_utilization`); every assumption is in the result's `notes`.

Every plan, whichever engine made it, answers `kvledger.core.plan.EnginePlan` (`totals`,
`binding`, `fit_at(C)`, `fits`, `notes`, `launch_command()`, …), and every result has
`to_json()`: the same document the command's `--json` prints.

Examples:
    >>> import kvledger
    >>> p = kvledger.plan("glm-5.3-flash", "--kv-cache-dtype fp8_e4m3")
    >>> p.ledgers.token.total_bytes, p.capacity.state_slots, p.capacity.binding.code
    (7260, 343, 'state_slots')
    >>> d = kvledger.plan("glm-5.3-flash", "--kv-cache-dtype fp8_e4m3 --disaggregation-mode decode "
    ...                   "--max-running-requests 32")
    >>> d.capacity.role.charged_state_slots, d.capacity.role.allocated_state_slots
    (33, 97)
    >>> kvledger.plan("glm-5.3-flash", "--pp-size 4 --kv-cache-dtype fp8_e4m3").pipeline.tokens
    28520512
    >>> v = kvledger.plan(flags="vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 2", gpu="H200")
    >>> v.engine.value, v.fit_at(32_768).requests, v.to_json()["schema"]
    ('vllm', 126, 'kvledger.vllm-plan/1')
    >>> rows = kvledger.sweep("glm-5.3-flash", gpu="H200", tp=8, dp=[1, 8])
    >>> [(r.totals.ranks, r.totals.workers) for r in rows], rows.to_json()["schema"]
    ([(8, 1), (8, 8)], 'kvledger.sweep/1')
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kvledger.core.engines import Engine
from kvledger.core.plan import EnginePlan
from kvledger.core.terms import MemoryTerms
from kvledger.model.config import DEFAULT_MODEL
from kvledger.sglang.launch import parse_flags
from kvledger.sglang.rules import DEFAULT_RULES
from kvledger.sglang.rules import RULES as SGLANG_RULES
from kvledger.sizing.flag_plans import PlanAsk, check_terms, plans_from_flags
from kvledger.vllm.flags import is_vllm_command
from kvledger.vllm.rules import DEFAULT_VLLM_RULES
from kvledger.vllm.rules import RULES as VLLM_RULES

if TYPE_CHECKING:
    from kvledger.sim.replay import SimResult
    from kvledger.sizing import Comparison, Recommendations, Sweep

Flags = str | Sequence[str]


def _rules(rules: str | None) -> tuple[str, str]:
    """(SGLang's rule set, vLLM's): `rules` names one per engine, comma-separated; an engine
    it does not name keeps its default."""
    chosen = {"sglang": DEFAULT_RULES, "vllm": DEFAULT_VLLM_RULES}
    for word in ([] if rules is None else [w.strip() for w in rules.split(",")]):
        if word in SGLANG_RULES:
            chosen["sglang"] = word
        elif word in VLLM_RULES:
            chosen["vllm"] = word
        else:
            raise ValueError(f"--rules {word!r}: expected one of "
                             f"{', '.join([*SGLANG_RULES, *VLLM_RULES])}")
    return chosen["sglang"], chosen["vllm"]


def _terms(weights_gib: float | None, available_gib: float | None,
           activation_gib: float | None, non_torch_gib: float | None,
           cudagraph_gib: float | None, gpu_memory_utilization: float | None) -> MemoryTerms:
    return MemoryTerms(weights_gib=weights_gib, available_gib=available_gib,
                       activation_gib=activation_gib, non_torch_gib=non_torch_gib,
                       cudagraph_gib=cudagraph_gib, gpu_memory_utilization=gpu_memory_utilization)


def plan(model: str = DEFAULT_MODEL, flags: Flags = (), *, engine: str | None = None,
         gpu: str | None = None, available_gib: float | None = None,
         weights_gib: float | None = None, gpu_memory_gib: float | None = None,
         rules: str | None = None, requests: int | None = None, context: int | None = None,
         family: str | None = None, activation_gib: float | None = None,
         non_torch_gib: float | None = None, cudagraph_gib: float | None = None,
         gpu_memory_utilization: float | None = None) -> EnginePlan:
    """Ledgers and capacity for `model` deployed with one engine's `flags`.

    Args:
        model: an embedded name (`kvledger models`), a Hugging Face repo id of one, a
            `config.json` path or a model directory. A model in `flags` must agree.
        flags: the engine's server flags, as a string or a list, or a pasted launch command
            (`python -m sglang.launch_server …`, `vllm serve MODEL …`).
        engine: `"sglang"` or `"vllm"`; default: vLLM for a pasted `vllm serve` or a vLLM
            rule set, else SGLang.
        gpu: a GPU of the catalogue (`kvledger gpus`); weights are subtracted per rank.
        available_gib: the engine's logged memory figure (SGLang: free after weights; vLLM:
            Available KV cache memory).
        weights_gib: weights per rank (default: estimated from the config).
        gpu_memory_gib: SGLang: the device's total memory, for a GPU not in the catalogue.
        rules: the engine's rule set (`sglang-0.5.21` and `vllm-0.33` by default).
        requests: a workload to check (global concurrent requests).
        context: tokens per request of the workload.
        family: read the config with this family's adapter.
        activation_gib: vLLM's profiled activation peak per rank (default 0, said in `notes`).
        non_torch_gib: vLLM's non-torch memory per rank (default 0, said in `notes`).
        cudagraph_gib: vLLM's CUDA-graph memory per rank (default 0, said in `notes`).
        gpu_memory_utilization: vLLM's budget fraction (default: the rule set's).

    Returns:
        An `EnginePlan` (`SglangPlan` or `VllmPlan`): `totals`, `binding`, `fit_at(C)` (requests
        of C tokens held at once, like for like across engines), `fits`, `notes` (every
        assumption made), `to_json()` (the `plan --json` document), and the engine's own
        `ledgers`, `capacity` and `layout`.

    Raises:
        ValueError: bad input, with the flag or field at fault in the message.
    """
    implied = "vllm" if is_vllm_command(flags) or (rules or "") in VLLM_RULES else "sglang"
    chosen = _engines(engine or implied)
    if len(chosen) != 1:
        raise ValueError(f"engine {engine!r}: one engine per plan (for both, plan twice and "
                         "`kvledger.compare` them)")
    sglang_rules, vllm_rules = _rules(rules)
    ask = PlanAsk(model=None if model == DEFAULT_MODEL else model, family=family, gpu=gpu,
                  gpu_memory_gib=gpu_memory_gib,
                  terms=_terms(weights_gib, available_gib, activation_gib, non_torch_gib,
                               cudagraph_gib, gpu_memory_utilization),
                  sglang_rules=sglang_rules, vllm_rules=vllm_rules, requests=requests,
                  context_tokens=context)
    plans, _ = plans_from_flags(flags, tuple(Engine(e) for e in chosen), ask)
    return plans[0]


def simulate(plan: EnginePlan, workload: str | None = "chat", *,
             trace: str | Path | None = None, num_requests: int | None = None, seed: int = 0,
             rate_per_s: float | None = None) -> SimResult:
    """Replay a generated workload (`chat`, `agent`, `shared-prompt`, `zipf`, `tool-use`,
    `long-doc-qa`) or a Mooncake trace (`trace=`, then `workload` is ignored) on one rank of
    `plan`, in accounting mode.

    Returns the `SimResult`: `summary` (hit rates, each ledger's peaks and blocking, host
    tier traffic), `series` (the per-step time series) and the finished `requests`. A plan
    with --enable-hierarchical-cache needs the `memory` extra (torch). A plan whose pools
    kvledger's memory system does not build (`plan.simulatable` false: vLLM's shared block
    pool) is a ValueError.
    """
    from kvledger.core.extras import MEMORY
    from kvledger.sim.replay import simulate as replay
    from kvledger.sim.sources import load_workload

    if not plan.simulatable:
        raise ValueError(f"a {plan.engine.display} plan: kvledger's memory system builds "
                         "SGLang's pools (radix tree, state slots), not this engine's; "
                         "simulate the SGLang plan of the same deployment")
    if plan.deployment.enable_hierarchical_cache:
        MEMORY.require("simulating the host tier (--enable-hierarchical-cache)")
    loaded = load_workload(trace=trace, generator=None if trace is not None else workload,
                           num_requests=num_requests, seed=seed, rate_per_s=rate_per_s)
    return replay(plan, loaded)


def _axis(value: object) -> tuple:
    if value is None:
        return (None,)
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(","))
    if isinstance(value, Iterable):
        return tuple(value)
    return (value,)


def sweep(model: str = DEFAULT_MODEL, flags: Flags = (), *, gpu: object = None,
          nodes: object = None, tp: object = None, dp: object = 1,
          kv_cache_dtype: object = None, mamba_ssm_dtype: object = None,
          available_gib: float | None = None, weights_gib: float | None = None,
          rules: str | None = None, requests: int | None = None,
          context: int | None = None, engine: object = "sglang",
          replicas: object = 1, activation_gib: float | None = None,
          non_torch_gib: float | None = None, cudagraph_gib: float | None = None,
          gpu_memory_utilization: float | None = None, pp: object = None,
          dcp: object = None, role: object = None) -> Sweep:
    """Plan every combination of the axes (each a value, a list or a comma string) over the
    SGLang deployment `flags` give (`dp`: attention DP; `replicas`: --dp-size without it;
    `pp`: pipeline stages; `dcp`: decode context parallelism; `role`: null, prefill, decode);
    one `SweepRow` per deployment and engine (`engine="sglang,vllm"`: vLLM rows need `gpu`,
    and take vLLM's terms), with `totals` over all its GPUs (`row.totals.running_requests`,
    `.tokens`, `.token_pool_bytes`, …) and `plan` (any engine's: `row.plan.fit_at(C)`), or
    `error` (reading such a row's `totals` raises `kvledger.sizing.NotPlanned` with it).

    Returns a `Sweep`: a sequence of rows with `notes` and `to_json()` (the `sweep --json`
    document).
    """
    from kvledger.sglang.deploy import DisaggMode, KVDtype, StateDtype
    from kvledger.sizing import Axes
    from kvledger.sizing import sweep as run

    def counts(value: object) -> tuple[int | None, ...]:
        return tuple(None if v is None else int(v) for v in _axis(value))

    axes = Axes(gpus=_axis(gpu), nodes=counts(nodes), tp=counts(tp),
                dp=tuple(int(d) for d in _axis(dp)),
                replicas=tuple(int(r) for r in _axis(replicas)),
                pp=counts(pp), dcp=counts(dcp),
                role=tuple(None if r is None else DisaggMode(r) for r in _axis(role)),
                kv_cache_dtype=tuple(None if k is None else KVDtype(k)
                                     for k in _axis(kv_cache_dtype)),
                mamba_ssm_dtype=tuple(None if s is None else StateDtype(s)
                                      for s in _axis(mamba_ssm_dtype)))
    engines = _engines(engine)
    terms = _terms(weights_gib, available_gib, activation_gib, non_torch_gib, cudagraph_gib,
                   gpu_memory_utilization)
    check_terms(terms, tuple(Engine(e) for e in engines))
    sglang_rules, vllm_rules = _rules(rules)
    parsed = parse_flags(flags)
    return run(parsed.model_ref or model, axes, parsed.deployment, rules=sglang_rules,
               requests=requests, context_tokens=context, engines=engines,
               vllm_rules=vllm_rules, terms=terms)


def _engines(engine: object) -> tuple[str, ...]:
    engines = tuple(str(e) for e in _axis(engine))
    if any(e not in ("sglang", "vllm") for e in engines):
        raise ValueError(f"engine {engine!r}: expected sglang, vllm or both")
    return engines


def compare(a: EnginePlan, b: EnginePlan, *, requests: int | None = None,
            context: int | None = None) -> Comparison:
    """Every quantity of plan `a` beside plan `b`, either engine's; `Difference.differs` marks
    a change. Both are checked against `requests` of `context` tokens when given (else each
    plan's own workload). The `Comparison` has `notes` and `to_json()`."""
    from kvledger.sizing.compare import compare as run  # the function, not its module

    return run(a, b, requests=requests, context_tokens=context)


def recommend(model: str = DEFAULT_MODEL, *, requests: int, context: int,
              gpu: object = None, flags: Flags = (), rules: str | None = None,
              top: int = 5, engine: object = "sglang", weights_gib: float | None = None,
              activation_gib: float | None = None, non_torch_gib: float | None = None,
              cudagraph_gib: float | None = None,
              gpu_memory_utilization: float | None = None,
              nodes: int | None = None) -> Recommendations:
    """The `top` cheapest layouts (fewest GPUs, then most headroom) fitting `requests`
    concurrent requests of `context` tokens (`nodes`: only layouts of exactly that many nodes
    of 8 GPUs), each with its engine's launch `command`
    (`engine="vllm"` or `"sglang,vllm"`: vLLM's layouts of the same GPUs are searched too;
    vLLM's terms also size the `vllm serve` command each SGLang fit carries). The
    `Recommendations` have `notes` and `to_json()`."""
    from kvledger.sizing.recommend import recommend as run

    engines = _engines(engine)
    terms = _terms(weights_gib, None, activation_gib, non_torch_gib, cudagraph_gib,
                   gpu_memory_utilization)
    check_terms(terms, (*(Engine(e) for e in engines), Engine.VLLM))
    sglang_rules, vllm_rules = _rules(rules)
    gpus = None if gpu is None else tuple(g for g in _axis(gpu) if g)
    parsed = parse_flags(flags)
    return run(parsed.model_ref or model, requests=requests, context_tokens=context,
               gpus=gpus, base=parsed.deployment, rules=sglang_rules, top=top,
               engines=engines, vllm_rules=vllm_rules, terms=terms, nodes=nodes)
