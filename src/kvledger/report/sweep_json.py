"""The `kvledger sweep`, `compare` and `recommend` `--json` documents (inside the envelope).

Schema `kvledger.sweep/1`: model, rules, workload{requests, context_tokens}|null,
rows[{gpu, nodes, tp_size, dp_size, enable_dp_attention, attn_tp_size, kv_cache_dtype,
mamba_ssm_dtype, ok, error|null, totals{ranks, workers, running_requests, tokens,
token_pool_bytes, state_pool_bytes, verify_bytes, side_bytes}|null, per_worker{state_slots,
max_total_tokens, max_running_requests}|null, binding (a plan/2 limit code)|null,
requests_per_gpu|null, fits|null}]. Dtypes are the resolved ones (`auto` resolved per GPU).

Schema `kvledger.compare/1`: a{model, rules, gpu, deployment}, b{…}, rows[{quantity, label,
a, b, differs}], differences (the number of rows that differ).

Schema `kvledger.recommend/1`: model, requests, context_tokens, searched, fits[{gpu, nodes,
tp_size, dp_size, enable_dp_attention, kv_cache_dtype, ranks, running_requests, tokens,
headroom, command}], failures[{reason, layouts}].
"""

from __future__ import annotations

from typing import Any

from kvledger.plan import Plan
from kvledger.report.envelope import envelope
from kvledger.sizing import Difference, Recommendations, SweepRow


def _point(row: SweepRow) -> dict[str, Any]:
    dep = row.plan.layout.deployment if row.plan else row.point.deployment
    point = {"gpu": row.gpu, "nodes": row.point.nodes}
    if dep is None:
        return point | dict.fromkeys(("tp_size", "dp_size", "enable_dp_attention",
                                      "attn_tp_size", "kv_cache_dtype", "mamba_ssm_dtype"))
    return point | {"tp_size": dep.tp_size, "dp_size": dep.dp_size,
                    "enable_dp_attention": dep.enable_dp_attention,
                    "attn_tp_size": dep.attn_tp_size, "kv_cache_dtype": dep.kv_cache_dtype.value,
                    "mamba_ssm_dtype": dep.mamba_ssm_dtype.value if dep.mamba_ssm_dtype else None}


def sweep_row_json(row: SweepRow) -> dict[str, Any]:
    doc = _point(row) | {"ok": row.ok, "error": row.error}
    if row.plan is None:
        return doc | {"totals": None, "per_worker": None, "binding": None,
                      "requests_per_gpu": None, "fits": None}
    cap, tot = row.plan.capacity, row.totals
    return doc | {
        "totals": {name: getattr(tot, name) for name in tot.__dataclass_fields__},
        "per_worker": {"state_slots": cap.state_slots, "max_total_tokens": cap.max_total_tokens,
                       "max_running_requests": cap.max_running_requests},
        "binding": cap.binding.code, "requests_per_gpu": round(row.requests_per_gpu, 3),
        "fits": row.fits,
    }


def sweep_json(model: str, rules: str, rows: list[SweepRow], *, requests: int | None,
               context_tokens: int | None, ignored_flags: tuple[str, ...] = (),
               notes: tuple[str, ...] = ()) -> dict[str, Any]:
    workload = (None if requests is None and context_tokens is None
                else {"requests": requests, "context_tokens": context_tokens})
    return envelope("sweep", {"model": model, "rules": rules, "workload": workload,
                              "rows": [sweep_row_json(r) for r in rows]},
                    ignored_flags=ignored_flags, notes=notes)


def _side(plan: Plan) -> dict[str, Any]:
    dep = plan.layout.deployment
    return {"model": plan.model.name, "rules": plan.layout.rules.name,
            "gpu": plan.gpu.name if plan.gpu else None,
            "deployment": {"tp_size": dep.tp_size, "dp_size": dep.dp_size,
                           "enable_dp_attention": dep.enable_dp_attention,
                           "kv_cache_dtype": dep.kv_cache_dtype.value}}


def compare_json(a: Plan, b: Plan, diffs: list[Difference], *,
                 ignored_flags: tuple[str, ...] = ()) -> dict[str, Any]:
    notes = [*(f"a: {n}" for n in a.notes), *(f"b: {n}" for n in b.notes)]
    return envelope("compare", {
        "a": _side(a), "b": _side(b),
        "rows": [{"quantity": d.quantity, "label": d.label, "a": d.a, "b": d.b,
                  "differs": d.differs} for d in diffs],
        "differences": sum(d.differs for d in diffs)}, ignored_flags=ignored_flags, notes=notes)


def recommend_json(model: str, rec: Recommendations, *,
                   ignored_flags: tuple[str, ...] = ()) -> dict[str, Any]:
    fits = []
    for r in rec.fits:
        dep = r.row.point.deployment
        tot = r.row.totals
        fits.append({"gpu": r.row.gpu, "nodes": r.row.point.nodes, "tp_size": dep.tp_size,
                     "dp_size": dep.dp_size, "enable_dp_attention": dep.enable_dp_attention,
                     "kv_cache_dtype": dep.kv_cache_dtype.value, "ranks": tot.ranks,
                     "running_requests": tot.running_requests, "tokens": tot.tokens,
                     "headroom": round(r.headroom, 3), "command": r.command})
    return envelope("recommend", {
        "model": model, "requests": rec.requests, "context_tokens": rec.context_tokens,
        "searched": rec.searched, "fits": fits,
        "failures": [{"reason": why, "layouts": n} for why, n in rec.failures]},
        ignored_flags=ignored_flags)
