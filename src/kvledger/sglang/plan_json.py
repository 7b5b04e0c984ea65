"""The `kvledger plan --json` document: a stable schema with exact integers.

Schema `kvledger.plan/2`, inside the common envelope (`core.envelope`: schema,
kvledger_version, ignored_flags, notes — the plan's and the host plan's assumptions):

    model{name, family, model_type, source, num_layers, full_layers, linear_layers,
    indexer_layers}, rules, gpu, deployment{every Deployment field, autos resolved, plus
    attn_tp_size, attn_dp_size, page_tokens, allocation_page_tokens (page × dcp),
    context_tokens, slots_per_request,
    held_slots_per_request},
    ledgers{per_token, draft_per_token|null, per_state_slot, per_request, side_buffers,
        verify_scratch|null, weights_per_rank|null}:
        {per, total_bytes, rows[{component, count, unit_bytes, total_bytes, detail}], memo[...]}
    capacity{available_bytes, pre_load_free_bytes, mem_fraction_static, slack_bytes,
        mm_reservation_bytes, rest_bytes, slot_bytes, token_bytes, state_slots,
        state_pool_bytes, max_total_tokens, token_pool_bytes, max_running_requests,
        logical_tokens (T × dcp), limits{code: requests}, binding, binding_label, unused_bytes,
        unbudgeted_bytes,
        state_source|null, verify_requests, verify_bytes}
    role ("null" | "prefill" | "decode"), pipeline|null{charged_slot_bytes, binding_stage,
    tokens, stages[{pp_rank, tag "PP0", start_layer, end_layer, full_layers, linear_layers,
    token_bytes, own_slot_bytes, alone_tokens, max_total_tokens, state_slots,
    max_running_requests, token_pool_bytes, state_pool_bytes_charged,
    state_pool_bytes_allocated, over_reserved_state_bytes}]}, role_pools|null{charged_/allocated_ state slots, verify
    rows and request rows, their byte sizes, corrected_tokens, unbudgeted_*_bytes},
    totals{ranks, workers, running_requests, tokens, token_pool_bytes, state_pool_bytes,
        verify_bytes, side_bytes}
    workload|null{requests, requests_per_rank, context_tokens, fits, first_overflow,
        rows[{ledger, label, need, capacity, need_bytes, max_requests, fits}]}
    host|null{mode, ratio, size_bytes, state_share|null, notes[], views[{name, host_tokens, host_state_slots,
        total_bytes, per_token{ledger}, pools{ledger}, coverage{object: status}}]}
    context_fit{context_tokens, requests, per_worker, workers, binding, binding_label}:
        requests of the workload's context (else the context length) that fit at once over
        the workers, and the ledger that runs out first there (a workload row code) — the
        same key as vLLM's plan document, like for like (added within major 2)

Codes: `binding` and the `limits` keys are max_running_requests (the flag binds),
context_heuristic (SGLang's T/context·512 default), tokens (T // 2), state_slots; a workload
row's `ledger` (and `first_overflow`) is tokens, state_slots, running_requests or
context_length. `*_label`
keys carry the words the tables print. Major 2 replaced version 1's prose values by these codes.
"""

from __future__ import annotations

from dataclasses import fields
from enum import Enum
from typing import TYPE_CHECKING, Any

from kvledger.core.envelope import envelope, schema_name
from kvledger.core.ledger import ledger_json
from kvledger.sglang.capacity import WORKLOAD_CODES
from kvledger.sglang.rolepools import RolePools

if TYPE_CHECKING:
    from kvledger.sglang.plan import SglangPlan

SCHEMA = schema_name("plan")


def workload_code(label: str) -> str:
    code = WORKLOAD_CODES.get(label)
    assert code is not None, f"workload ledger {label!r} has no JSON code"
    return code


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, Enum) else value


def host_json(plan: SglangPlan) -> dict[str, Any] | None:
    host = plan.host
    if host is None:
        return None
    views = [{"name": v.rules.name, "host_tokens": v.host_tokens,
              "host_state_slots": v.host_state_slots, "total_bytes": v.pools.total_bytes,
              "per_token": ledger_json(v.per_token), "pools": ledger_json(v.pools),
              "coverage": {obj.value: status.value for obj, status in v.coverage.items()}}
             for v in host.views]
    return {"mode": host.mode.value, "ratio": host.ratio, "size_bytes": host.size_bytes,
            "state_share": host.state_share, "notes": list(host.notes), "views": views}


def plan_notes(plan: SglangPlan) -> list[str]:
    """Every assumption the plan states: its own notes, then the host plan's."""
    return [*plan.notes, *(plan.host.notes if plan.host else ())]


def role_pools_json(role: RolePools | None) -> dict[str, Any] | None:
    """A prefill/decode server's pools: charged and allocated counts, unbudgeted bytes."""
    if role is None:
        return None
    return {f.name: getattr(role, f.name) for f in fields(role)} | {
        "unbudgeted_state_bytes": role.unbudgeted_state_bytes,
        "unbudgeted_verify_bytes": role.unbudgeted_verify_bytes,
        "unbudgeted_request_bytes": role.unbudgeted_request_bytes,
        "unbudgeted_bytes": role.unbudgeted_bytes}


def pipeline_json(plan: SglangPlan) -> dict[str, Any] | None:
    """Every pipeline stage (--pp-size > 1): layers, bytes, T alone and shared, K, N, pools."""
    pipe = plan.pipeline
    if pipe is None:
        return None
    return {"charged_slot_bytes": pipe.charged_slot_bytes, "binding_stage": pipe.binding_stage,
            "tokens": pipe.tokens, "stages": [{
                "pp_rank": s.pp_rank, "tag": f"PP{s.pp_rank}", "start_layer": s.start_layer,
                "end_layer": s.end_layer, "full_layers": s.num_full_layers,
                "linear_layers": s.num_linear_layers, "token_bytes": s.capacity.token_bytes,
                "own_slot_bytes": s.own_slot_bytes, "alone_tokens": s.alone_tokens,
                "max_total_tokens": s.capacity.max_total_tokens,
                "state_slots": s.capacity.state_slots,
                "max_running_requests": s.capacity.max_running_requests,
                "token_pool_bytes": s.capacity.token_pool_bytes,
                "state_pool_bytes_charged": s.capacity.state_pool_bytes,
                "state_pool_bytes_allocated": s.allocated_state_pool_bytes,
                "over_reserved_state_bytes": s.over_reserved_state_bytes}
                for s in pipe.stages]}


def plan_body(plan: SglangPlan) -> dict[str, Any]:
    """The plan's keys, without the envelope (sweep and compare embed them)."""
    lay, cap, model = plan.layout, plan.capacity, plan.model
    dep = lay.deployment
    deployment = {f.name: _plain(getattr(dep, f.name)) for f in fields(dep)}
    deployment |= {
        "attn_tp_size": dep.attn_tp_size, "attn_dp_size": dep.attn_dp_size,
        "page_tokens": lay.page_tokens, "context_tokens": lay.context_tokens,
        "slots_per_request": lay.slots_per_request,
        "allocation_page_tokens": lay.allocation_page_tokens,
        "held_slots_per_request": lay.held_slots_per_request,
    }
    work = plan.workload
    return {
        "model": {"name": model.name, "family": model.family.value,
                  "model_type": model.model_type, "source": model.source,
                  "num_layers": model.num_layers, "full_layers": model.num_full_layers,
                  "linear_layers": model.num_linear_layers,
                  "indexer_layers": model.num_indexer_layers},
        "rules": lay.rules.name,
        "gpu": plan.gpu.name if plan.gpu else None,
        "deployment": deployment,
        "ledgers": {
            "per_token": ledger_json(plan.ledgers.token),
            "draft_per_token": ledger_json(plan.ledgers.draft_token),
            "per_state_slot": ledger_json(plan.ledgers.state),
            "per_request": ledger_json(plan.ledgers.request),
            "side_buffers": ledger_json(cap.side),
            "verify_scratch": ledger_json(cap.verify),
            "weights_per_rank": ledger_json(plan.ledgers.weights),
        },
        "capacity": {
            "available_bytes": cap.memory.available_bytes,
            "pre_load_free_bytes": cap.memory.pre_load_free_bytes,
            "mem_fraction_static": cap.memory.mem_fraction_static,
            "slack_bytes": cap.slack_bytes, "mm_reservation_bytes": cap.mm_reservation_bytes,
            "rest_bytes": cap.rest_bytes, "slot_bytes": cap.slot_bytes,
            "token_bytes": cap.token_bytes, "state_slots": cap.state_slots,
            "state_pool_bytes": cap.state_pool_bytes, "max_total_tokens": cap.max_total_tokens,
            "token_pool_bytes": cap.token_pool_bytes,
            "max_running_requests": cap.max_running_requests,
            "logical_tokens": cap.logical_tokens,
            "limits": {limit.code: n for limit, n in cap.limits.items()},
            "binding": cap.binding.code, "binding_label": cap.binding.value,
            "unused_bytes": cap.unused_bytes,
            "unbudgeted_bytes": cap.side.total_bytes,
            "state_source": cap.state_budget.source.value if cap.state_budget else None,
            "verify_requests": cap.state_budget.verify_requests if cap.state_budget else 0,
            "verify_bytes": cap.verify_bytes,
        },
        "role": dep.disaggregation_mode.value,
        "pipeline": pipeline_json(plan),
        "role_pools": role_pools_json(cap.role),
        "totals": {f.name: getattr(plan.totals, f.name) for f in fields(plan.totals)},
        "workload": None if work is None else {
            "requests": work.requests, "requests_per_rank": work.requests_per_rank,
            "context_tokens": work.context_tokens, "fits": work.fits,
            "first_overflow": workload_code(work.first_overflow.ledger)
            if work.first_overflow else None,
            "rows": [{"ledger": workload_code(r.ledger), "label": r.ledger, "need": r.need, "capacity": r.capacity,
                      "need_bytes": r.need_bytes, "max_requests": r.max_requests,
                      "fits": r.fits} for r in work.rows],
        },
        "host": host_json(plan),
        "context_fit": plan.fit_at().to_json(),
    }


def plan_json(plan: SglangPlan, ignored_flags: tuple[str, ...] = ()) -> dict[str, Any]:
    """The `kvledger plan --json` document."""
    return envelope("plan", plan_body(plan), ignored_flags=ignored_flags, notes=plan_notes(plan))
