"""The `kvledger sweep`, `compare` and `recommend` `--json` documents (inside the envelope).

Schema `kvledger.sweep/1`: model, rules, engines, workload{requests, context_tokens}|null,
rows[{gpu, nodes, engine ("sglang"|"vllm"), tp_size, dp_size, enable_dp_attention,
replicas (SGLang: dp_size without DP attention, else 1; vLLM: data_parallel_size),
attn_tp_size, pp_size, dcp_size, disaggregation_mode ("null"|"prefill"|"decode"; vLLM rows:
null), kv_cache_dtype, mamba_ssm_dtype (pp_size, dcp_size and disaggregation_mode added within
major 1), ok, error|null, totals{ranks, workers,
running_requests, tokens, token_pool_bytes, state_pool_bytes, verify_bytes, side_bytes}|null,
per_worker|null, binding|null, requests_per_gpu|null, fits|null}]. SGLang rows: dtypes
resolved (`auto` resolved per GPU), per_worker{state_slots, max_total_tokens,
max_running_requests}, binding a plan/2 limit code. vLLM rows (`kvledger.sizing.vllm_point`):
the point's vLLM flags (tp_size = --tensor-parallel-size, dp_size = --data-parallel-size,
dtypes as vLLM spells them), per_worker (per DP engine){num_gpu_blocks, blocks_per_request,
max_concurrency, gpu_kv_cache_tokens, max_num_seqs, max_model_len}, binding `kv_blocks` or
`max_num_seqs`, token_pool_bytes the one block pool (states included, state_pool_bytes 0).
Every planned row also has context_fit{context_tokens, requests, per_worker, workers, binding,
binding_label}|null: requests of C tokens held at once over the whole deployment, like for like
across engines (C = the workload's context_tokens, else each engine's context length: SGLang's
context length, vLLM's max_model_len), and what runs out first there (SGLang: tokens,
state_slots, running_requests or context_length; vLLM: kv_blocks, max_num_seqs or
context_length); added within major 1. `rules` names the rule set of each engine swept,
comma-separated in engine order.

Schema `kvledger.compare/1`: a{model, engine, rules, gpu, deployment}, b{…}, rows[{quantity,
label, a, b, differs}], differences (the number of rows that differ); the envelope's notes are
both plans' assumptions, marked `a:` and `b:`. A vLLM side's
deployment is {tensor_parallel_size, data_parallel_size, max_model_len, kv_cache_dtype}; its
rows are `kvledger.sizing.compare`'s (null where SGLang's quantity has no vLLM counterpart).

Schema `kvledger.recommend/1`: model, requests, context_tokens, searched, fits[{gpu, nodes,
engine, tp_size, dp_size, enable_dp_attention, replicas, pp_size, dcp_size,
disaggregation_mode (these four added within major 1), kv_cache_dtype, ranks, running_requests, tokens,
headroom, command, vllm_command|null, vllm_why|null, context_fit{…} (as in sweep rows, at
context_tokens; added within major 1)}], failures[{reason, layouts}]
(`command`: the engine's launch command; `vllm_command`: vLLM's `vllm serve …` for the same
GPUs when its plan holds the workload, else `vllm_why`. SGLang fits give the flags as chosen;
vLLM fits, from `--engine vllm`, give vLLM's flags as in sweep rows, and `vllm_command` is
their `command`). The envelope's notes are every assumption behind the fits' plans and vLLM's
plans of the same layouts (all layouts' when nothing fits).

Schema `kvledger.recommend-pd/1` (`recommend --pd`, `kvledger.sizing.pd_split`): model, gpu,
nodes, requests, context_tokens, best (the answer's split, `"5P:3D"`, or null),
splits[{ratio, fits, prefill{nodes, fits, why|null, layout (a recommend/1 fit)|null},
decode{…}}], decode nodes 1 … N − 1 in order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kvledger.core.envelope import envelope
from kvledger.core.plan import EnginePlan
from kvledger.sglang.plan import deployment_fields

if TYPE_CHECKING:  # the results import this module to write themselves
    from kvledger.sizing.compare import Comparison
    from kvledger.sizing.recommend import Recommendation, Recommendations
    from kvledger.sizing.run import Sweep, SweepRow

_POINT = ("tp_size", "dp_size", "enable_dp_attention", "replicas", "attn_tp_size", "pp_size",
          "dcp_size", "disaggregation_mode", "kv_cache_dtype", "mamba_ssm_dtype")
_FIT_POINT = ("tp_size", "dp_size", "enable_dp_attention", "replicas", "pp_size", "dcp_size",
              "disaggregation_mode", "kv_cache_dtype")


def _point(row: SweepRow) -> dict[str, Any]:
    point = {"gpu": row.gpu, "nodes": row.point.nodes, "engine": row.engine}
    if row.plan is not None:  # the plan's own flags, as its engine spells them
        return point | row.plan.layout_fields()
    if row.point.deployment is None:
        return point | dict.fromkeys(_POINT)
    return point | deployment_fields(row.point.deployment)  # the grid's point, unplanned


def sweep_row_json(row: SweepRow) -> dict[str, Any]:
    doc = _point(row) | {"ok": row.ok, "error": row.error}
    if row.plan is None:
        return doc | {"totals": None, "per_worker": None, "binding": None,
                      "requests_per_gpu": None, "fits": None, "context_fit": None}
    tot = row.totals
    per_worker = {name: round(value, 3) if isinstance(value, float) else value
                  for name, value in row.plan.per_worker().items()}
    return doc | {"totals": {name: getattr(tot, name) for name in tot.__dataclass_fields__},
                  "per_worker": per_worker, "binding": row.binding,
                  "requests_per_gpu": round(row.requests_per_gpu, 3), "fits": row.fits,
                  "context_fit": row.plan.fit_at(row.workload[1]).to_json()}


def sweep_json(sweep: Sweep, *, ignored_flags: tuple[str, ...] = ()) -> dict[str, Any]:
    workload = (None if sweep.requests is None and sweep.context_tokens is None
                else {"requests": sweep.requests, "context_tokens": sweep.context_tokens})
    return envelope("sweep", {"model": sweep.model, "rules": sweep.rules,
                              "engines": list(sweep.engines), "workload": workload,
                              "rows": [sweep_row_json(r) for r in sweep]},
                    ignored_flags=ignored_flags, notes=sweep.notes)


def _side(plan: EnginePlan) -> dict[str, Any]:
    return {"model": plan.model.name, "engine": plan.engine.value, "rules": plan.rules.name,
            "gpu": plan.gpu.name if plan.gpu else None, "deployment": plan.flag_fields()}


def compare_json(comparison: Comparison, *,
                 ignored_flags: tuple[str, ...] = ()) -> dict[str, Any]:
    return envelope("compare", {
        "a": _side(comparison.a), "b": _side(comparison.b),
        "rows": [{"quantity": d.quantity, "label": d.label, "a": d.a, "b": d.b,
                  "differs": d.differs} for d in comparison],
        "differences": comparison.differences}, ignored_flags=ignored_flags,
        notes=comparison.notes)


def recommendation_json(r: Recommendation) -> dict[str, Any]:
    """One fit of `kvledger.recommend/1` (module doc)."""
    assert r.row.plan is not None, "a recommendation is a planned row"
    chosen = r.row.plan.layout_fields(as_given=True)
    point = {"gpu": r.row.gpu, "nodes": r.row.point.nodes, "engine": r.engine,
             **{name: chosen[name] for name in _FIT_POINT}}
    tot = r.row.totals
    return point | {"ranks": tot.ranks, "running_requests": tot.running_requests,
                    "tokens": tot.tokens, "headroom": round(r.headroom, 3),
                    "command": r.command, "vllm_command": r.vllm_command,
                    "vllm_why": r.vllm_why,
                    "context_fit": r.row.plan.fit_at(r.row.workload[1]).to_json()}


def recommend_json(rec: Recommendations, *,
                   ignored_flags: tuple[str, ...] = ()) -> dict[str, Any]:
    fits = [recommendation_json(r) for r in rec.fits]
    return envelope("recommend", {
        "model": rec.model, "requests": rec.requests, "context_tokens": rec.context_tokens,
        "searched": rec.searched, "fits": fits,
        "failures": [{"reason": why, "layouts": n} for why, n in rec.failures]},
        ignored_flags=ignored_flags, notes=rec.notes)
