"""The `kvledger sweep`, `compare` and `recommend` `--json` documents (inside the envelope).

Schema `kvledger.sweep/1`: model, rules, engines, workload{requests, context_tokens}|null,
rows[{gpu, nodes, engine ("sglang"|"vllm"), tp_size, dp_size, enable_dp_attention,
replicas (SGLang: dp_size without DP attention, else 1; vLLM: data_parallel_size),
attn_tp_size, kv_cache_dtype, mamba_ssm_dtype, ok, error|null, totals{ranks, workers,
running_requests, tokens, token_pool_bytes, state_pool_bytes, verify_bytes, side_bytes}|null,
per_worker|null, binding|null, requests_per_gpu|null, fits|null}]. SGLang rows: dtypes
resolved (`auto` resolved per GPU), per_worker{state_slots, max_total_tokens,
max_running_requests}, binding a plan/2 limit code. vLLM rows (`kvledger.sizing.vllm_point`):
the point's vLLM flags (tp_size = --tensor-parallel-size, dp_size = --data-parallel-size,
dtypes as vLLM spells them), per_worker (per DP engine){num_gpu_blocks, blocks_per_request,
max_concurrency, gpu_kv_cache_tokens, max_num_seqs, max_model_len}, binding `kv_blocks` or
`max_num_seqs`, token_pool_bytes the one block pool (states included, state_pool_bytes 0).

Schema `kvledger.compare/1`: a{model, engine, rules, gpu, deployment}, b{…}, rows[{quantity,
label, a, b, differs}], differences (the number of rows that differ). A vLLM side's
deployment is {tensor_parallel_size, data_parallel_size, max_model_len, kv_cache_dtype}; its
rows are `kvledger.sizing.compare`'s (null where SGLang's quantity has no vLLM counterpart).

Schema `kvledger.recommend/1`: model, requests, context_tokens, searched, fits[{gpu, nodes,
engine, tp_size, dp_size, enable_dp_attention, kv_cache_dtype, ranks, running_requests, tokens,
headroom, command, vllm_command|null, vllm_why|null}], failures[{reason, layouts}]
(`command`: the engine's launch command; `vllm_command`: vLLM's `vllm serve …` for the same
GPUs when its plan holds the workload, else `vllm_why`. SGLang fits give the flags as chosen;
vLLM fits, from `--engine vllm`, give vLLM's flags as in sweep rows, and `vllm_command` is
their `command`).
"""

from __future__ import annotations

from typing import Any

from kvledger.report.envelope import envelope
from kvledger.sglang.plan import Plan
from kvledger.sizing import Difference, Recommendation, Recommendations, SweepRow
from kvledger.vllm.plan import VllmPlan


def _vllm_point(row: SweepRow) -> dict[str, Any]:
    dep = row.vllm_plan.layout.deployment
    return {"gpu": row.gpu, "nodes": row.point.nodes, "engine": row.engine,
            "tp_size": dep.tensor_parallel_size, "dp_size": dep.data_parallel_size,
            "enable_dp_attention": False, "replicas": dep.data_parallel_size,
            "attn_tp_size": dep.tensor_parallel_size,
            "kv_cache_dtype": dep.kv_cache_dtype, "mamba_ssm_dtype": dep.mamba_ssm_cache_dtype}


def _point(row: SweepRow) -> dict[str, Any]:
    if row.vllm_plan is not None:
        return _vllm_point(row)
    dep = row.plan.layout.deployment if row.plan else row.point.deployment
    point = {"gpu": row.gpu, "nodes": row.point.nodes, "engine": row.engine}
    if dep is None:
        return point | dict.fromkeys(("tp_size", "dp_size", "enable_dp_attention", "replicas",
                                      "attn_tp_size", "kv_cache_dtype", "mamba_ssm_dtype"))
    return point | {"tp_size": dep.tp_size, "dp_size": dep.dp_size,
                    "enable_dp_attention": dep.enable_dp_attention,
                    "replicas": 1 if dep.enable_dp_attention else dep.dp_size,
                    "attn_tp_size": dep.attn_tp_size, "kv_cache_dtype": dep.kv_cache_dtype.value,
                    "mamba_ssm_dtype": dep.mamba_ssm_dtype.value if dep.mamba_ssm_dtype else None}


def sweep_row_json(row: SweepRow) -> dict[str, Any]:
    doc = _point(row) | {"ok": row.ok, "error": row.error}
    if not row.ok:
        return doc | {"totals": None, "per_worker": None, "binding": None,
                      "requests_per_gpu": None, "fits": None}
    tot = row.totals
    if row.vllm_plan is not None:
        vcap = row.vllm_plan.capacity
        per_engine = {"num_gpu_blocks": vcap.num_blocks,
                      "blocks_per_request": vcap.blocks_per_request,
                      "max_concurrency": round(vcap.max_concurrency, 3),
                      "gpu_kv_cache_tokens": vcap.logged_tokens, "max_num_seqs": vcap.max_num_seqs,
                      "max_model_len": row.vllm_plan.layout.max_model_len}
        return doc | {"totals": {name: getattr(tot, name) for name in tot.__dataclass_fields__},
                      "per_worker": per_engine, "binding": row.binding,
                      "requests_per_gpu": round(row.requests_per_gpu, 3), "fits": row.fits}
    cap = row.plan.capacity
    return doc | {
        "totals": {name: getattr(tot, name) for name in tot.__dataclass_fields__},
        "per_worker": {"state_slots": cap.state_slots, "max_total_tokens": cap.max_total_tokens,
                       "max_running_requests": cap.max_running_requests},
        "binding": cap.binding.code, "requests_per_gpu": round(row.requests_per_gpu, 3),
        "fits": row.fits,
    }


def sweep_json(model: str, rules: str, rows: list[SweepRow], *, requests: int | None,
               context_tokens: int | None, ignored_flags: tuple[str, ...] = (),
               notes: tuple[str, ...] = (), engines: tuple[str, ...] = ("sglang",)
               ) -> dict[str, Any]:
    workload = (None if requests is None and context_tokens is None
                else {"requests": requests, "context_tokens": context_tokens})
    return envelope("sweep", {"model": model, "rules": rules, "engines": list(engines),
                              "workload": workload,
                              "rows": [sweep_row_json(r) for r in rows]},
                    ignored_flags=ignored_flags, notes=notes)


def _side(plan: Plan | VllmPlan) -> dict[str, Any]:
    dep = plan.layout.deployment
    if isinstance(plan, VllmPlan):
        return {"model": plan.model.name, "engine": "vllm", "rules": plan.layout.rules.name,
                "gpu": plan.gpu.name if plan.gpu else None,
                "deployment": {"tensor_parallel_size": dep.tensor_parallel_size,
                               "data_parallel_size": dep.data_parallel_size,
                               "max_model_len": plan.layout.max_model_len,
                               "kv_cache_dtype": dep.kv_cache_dtype}}
    return {"model": plan.model.name, "engine": "sglang", "rules": plan.layout.rules.name,
            "gpu": plan.gpu.name if plan.gpu else None,
            "deployment": {"tp_size": dep.tp_size, "dp_size": dep.dp_size,
                           "enable_dp_attention": dep.enable_dp_attention,
                           "kv_cache_dtype": dep.kv_cache_dtype.value}}


def compare_json(a: Plan | VllmPlan, b: Plan | VllmPlan, diffs: list[Difference], *,
                 ignored_flags: tuple[str, ...] = ()) -> dict[str, Any]:
    notes = [*(f"a: {n}" for n in a.notes), *(f"b: {n}" for n in b.notes)]
    return envelope("compare", {
        "a": _side(a), "b": _side(b),
        "rows": [{"quantity": d.quantity, "label": d.label, "a": d.a, "b": d.b,
                  "differs": d.differs} for d in diffs],
        "differences": sum(d.differs for d in diffs)}, ignored_flags=ignored_flags, notes=notes)


def recommendation_json(r: Recommendation) -> dict[str, Any]:
    """One fit of `kvledger.recommend/1` (module doc)."""
    if r.row.vllm_plan is not None:
        point = {k: v for k, v in _vllm_point(r.row).items()
                 if k in ("gpu", "nodes", "engine", "tp_size", "dp_size", "enable_dp_attention",
                          "kv_cache_dtype")}
    else:
        dep = r.row.point.deployment
        point = {"gpu": r.row.gpu, "nodes": r.row.point.nodes, "engine": r.engine,
                 "tp_size": dep.tp_size, "dp_size": dep.dp_size,
                 "enable_dp_attention": dep.enable_dp_attention,
                 "kv_cache_dtype": dep.kv_cache_dtype.value}
    tot = r.row.totals
    return point | {"ranks": tot.ranks, "running_requests": tot.running_requests,
                    "tokens": tot.tokens, "headroom": round(r.headroom, 3),
                    "command": r.command, "vllm_command": r.vllm_command,
                    "vllm_why": r.vllm_why}


def recommend_json(model: str, rec: Recommendations, *,
                   ignored_flags: tuple[str, ...] = ()) -> dict[str, Any]:
    fits = [recommendation_json(r) for r in rec.fits]
    return envelope("recommend", {
        "model": model, "requests": rec.requests, "context_tokens": rec.context_tokens,
        "searched": rec.searched, "fits": fits,
        "failures": [{"reason": why, "layouts": n} for why, n in rec.failures]},
        ignored_flags=ignored_flags)
