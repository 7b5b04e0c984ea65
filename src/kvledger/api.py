"""The Python API: `kvledger.plan`, `kvledger.simulate`, `kvledger.sweep`, `kvledger.compare`
and `kvledger.recommend`, the same calls the command line makes.

Deployments are given the way SGLang is launched: flags as one string or a list
(`"--tp 8 --dp 8 --enable-dp-attention"`), or a whole pasted launch command. Memory is one
of `gpu=` (a catalogue GPU, weights subtracted) or `available_gib=` (what SGLang logs as free
after weights); with neither, 100 GiB after weights is assumed and said in `plan.notes`.

Examples:
    >>> import kvledger
    >>> p = kvledger.plan("glm-5.3-flash", "--kv-cache-dtype fp8_e4m3")
    >>> p.ledgers.token.total_bytes, p.capacity.state_slots, p.capacity.binding.code
    (7260, 343, 'state_slots')
    >>> rows = kvledger.sweep("glm-5.3-flash", gpu="H200", tp=8, dp=[1, 8])
    >>> [(r.totals.ranks, r.totals.workers) for r in rows]
    [(8, 1), (8, 8)]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kvledger.model.config import DEFAULT_MODEL
from kvledger.sglang.launch import parse_flags
from kvledger.sglang.plan import SglangPlan, make_plan
from kvledger.sglang.rules import DEFAULT_RULES

if TYPE_CHECKING:
    from kvledger.sim.replay import SimResult
    from kvledger.sizing import Difference, Recommendations, SweepRow

Flags = str | Sequence[str]


def plan(model: str = DEFAULT_MODEL, flags: Flags = (), *, gpu: str | None = None,
         available_gib: float | None = None, weights_gib: float | None = None,
         rules: str = DEFAULT_RULES, requests: int | None = None,
         context: int | None = None) -> SglangPlan:
    """Ledgers and capacity for `model` deployed with SGLang `flags`.

    Args:
        model: an embedded name (`kvledger models`), a Hugging Face repo id of one, a
            `config.json` path or a model directory. A `--model-path` in `flags` must agree.
        flags: SGLang server flags, as a string or a list, or a pasted launch command.
        gpu: a GPU of the catalogue (`kvledger gpus`); weights are subtracted per rank.
        available_gib: free memory per rank after weights, as SGLang logs it.
        weights_gib: weights per rank (default: estimated from the config).
        rules: the engine rule set (`sglang-0.5.21`, the article's release, by default).
        requests: with `context`, a workload to check (global concurrent requests).
        context: tokens per request of the workload check.

    Returns:
        The `SglangPlan`: `ledgers` (per token, per state slot, per request), `capacity` (K, T, N
        per rank, every limit and the binding one, `totals` over the whole deployment),
        `workload` (the check, or None), `host` (with --enable-hierarchical-cache) and
        `notes` (every assumption made).

    Raises:
        ValueError: bad input, with the flag or field at fault in the message.
    """
    parsed = parse_flags(flags)
    if parsed.model_ref and model != DEFAULT_MODEL and parsed.model_ref != model:
        raise ValueError(f"model {model!r} contradicts --model-path {parsed.model_ref!r}")
    return make_plan(parsed.model_ref or model, parsed.deployment, rules=rules, gpu=gpu,
                     available_gib=available_gib, weights_gib=weights_gib, requests=requests,
                     context_tokens=context)


def simulate(plan: SglangPlan, workload: str | None = "chat", *, trace: str | Path | None = None,
             num_requests: int | None = None, seed: int = 0,
             rate_per_s: float | None = None) -> SimResult:
    """Replay a generated workload (`chat`, `agent`, `shared-prompt`, `zipf`) or a Mooncake
    trace (`trace=`, then `workload` is ignored) on one rank of `plan`, in accounting mode.

    Returns the `SimResult`: `summary` (hit rates, each ledger's peaks and blocking, host
    tier traffic), `series` (the per-step time series) and the finished `requests`. A plan
    with --enable-hierarchical-cache needs the `memory` extra (torch).
    """
    from kvledger.core.extras import MEMORY
    from kvledger.sim.replay import simulate as replay
    from kvledger.sim.sources import load_workload

    if plan.layout.deployment.enable_hierarchical_cache:
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
          rules: str = DEFAULT_RULES, requests: int | None = None,
          context: int | None = None, engine: object = "sglang",
          replicas: object = 1) -> list[SweepRow]:
    """Plan every combination of the axes (each a value, a list or a comma string) over the
    deployment `flags` give (`dp`: attention DP; `replicas`: --dp-size without it);
    one `SweepRow` per deployment and engine (`engine="sglang,vllm"`:
    vLLM rows need `gpu`), with `totals` over all its GPUs (`row.totals.running_requests`,
    `.tokens`, `.token_pool_bytes`, …) or `error`.
    """
    from kvledger.sglang.deploy import KVDtype, StateDtype
    from kvledger.sizing import Axes
    from kvledger.sizing import sweep as run

    axes = Axes(gpus=_axis(gpu), nodes=tuple(None if n is None else int(n) for n in _axis(nodes)),
                tp=tuple(None if t is None else int(t) for t in _axis(tp)),
                dp=tuple(int(d) for d in _axis(dp)),
                replicas=tuple(int(r) for r in _axis(replicas)),
                kv_cache_dtype=tuple(None if k is None else KVDtype(k)
                                     for k in _axis(kv_cache_dtype)),
                mamba_ssm_dtype=tuple(None if s is None else StateDtype(s)
                                      for s in _axis(mamba_ssm_dtype)))
    parsed = parse_flags(flags)
    return run(parsed.model_ref or model, axes, parsed.deployment, rules=rules,
               available_gib=available_gib, weights_gib=weights_gib, requests=requests,
               context_tokens=context, engines=_engines(engine))


def _engines(engine: object) -> tuple[str, ...]:
    engines = tuple(str(e) for e in _axis(engine))
    if any(e not in ("sglang", "vllm") for e in engines):
        raise ValueError(f"engine {engine!r}: expected sglang, vllm or both")
    return engines


def compare(a: SglangPlan, b: SglangPlan) -> list[Difference]:
    """Every quantity of plan `a` beside plan `b`; `Difference.differs` marks a change."""
    from kvledger.sizing.compare import compare as run  # the function, not its module

    return run(a, b)


def recommend(model: str = DEFAULT_MODEL, *, requests: int, context: int,
              gpu: object = None, flags: Flags = (), rules: str = DEFAULT_RULES,
              top: int = 5, engine: object = "sglang") -> Recommendations:
    """The `top` cheapest layouts (fewest GPUs, then most headroom) fitting `requests`
    concurrent requests of `context` tokens, each with its engine's launch `command`
    (`engine="vllm"` or `"sglang,vllm"`: vLLM's layouts of the same GPUs are searched too)."""
    from kvledger.sizing.recommend import recommend as run

    gpus = None if gpu is None else tuple(g for g in _axis(gpu) if g)
    parsed = parse_flags(flags)
    return run(parsed.model_ref or model, requests=requests, context_tokens=context,
               gpus=gpus, base=parsed.deployment, rules=rules, top=top,
               engines=_engines(engine))
