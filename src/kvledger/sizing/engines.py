"""Each engine's planner of one sweep point, behind one signature (`PointPlanner`).

A point is a deployment in SGLang's flags on one GPU (`kvledger.sizing.axes`); the SGLang
planner takes it as is, the vLLM planner on the same GPUs in vLLM's flags
(`kvledger.sizing.vllm_point`). Both take the same `MemoryTerms` and read the ones they have
(`kvledger.sizing.flag_plans.READS`); what a planner refuses is a `ValueError` naming the flag, which a sweep row carries
as its reason. Adding an engine is one entry in `PLANNERS`.

>>> from kvledger.sglang.deploy import Deployment
>>> from kvledger.sizing.axes import Point
>>> point = Point(gpu="H200", nodes=1, deployment=Deployment(tp_size=8))
>>> plans = [plan_point(e, "glm-5.3-flash", point) for e in (Engine.SGLANG, Engine.VLLM)]
>>> [(p.engine.value, p.totals.ranks, p.binding.code) for p in plans]
[('sglang', 8, 'state_slots'), ('vllm', 8, 'kv_blocks')]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from kvledger.core.engines import Engine
from kvledger.core.plan import EnginePlan
from kvledger.core.terms import MemoryTerms
from kvledger.model.arch import ModelArch
from kvledger.sglang.deploy import DisaggMode
from kvledger.sglang.plan import make_plan
from kvledger.sglang.rules import DEFAULT_RULES
from kvledger.sizing.axes import Point
from kvledger.sizing.vllm_point import EP_NOTE, ROLE_NOTE, vllm_deployment
from kvledger.vllm.plan import make_vllm_plan
from kvledger.vllm.rules import DEFAULT_VLLM_RULES

Workload = tuple[int | None, int | None]  # (requests, context_tokens)


@dataclass(frozen=True, slots=True, kw_only=True)
class PointPlanner:
    """One engine's planner: (model, point, rule set, terms, workload) → its plan."""

    engine: Engine
    default_rules: str
    plan: Callable[[ModelArch | str, Point, str, MemoryTerms, Workload], EnginePlan]


def _sglang(model: ModelArch | str, point: Point, rules: str, terms: MemoryTerms,
            workload: Workload) -> EnginePlan:
    requests, context_tokens = workload
    return make_plan(model, point.deployment, rules=rules, gpu=point.gpu,
                     available_gib=None if point.gpu else terms.available_gib,
                     weights_gib=terms.weights_gib, requests=requests,
                     context_tokens=context_tokens)


def _vllm(model: ModelArch | str, point: Point, rules: str, terms: MemoryTerms,
          workload: Workload) -> EnginePlan:
    if point.gpu is None:
        raise ValueError("--engine vllm: needs --gpu (vLLM sizes its pool from the GPU's "
                         "memory × --gpu-memory-utilization)")
    assert point.deployment is not None, "a skipped point has no plan"
    vdep = vllm_deployment(point.deployment, workload[1])
    if terms.gpu_memory_utilization is not None:
        vdep = replace(vdep, gpu_memory_utilization=terms.gpu_memory_utilization)
    if terms.kv_cache_memory_bytes is not None:  # vLLM's own flag: the budget is not used
        vdep = replace(vdep, kv_cache_memory_bytes=terms.kv_cache_memory_bytes)
    plan = make_vllm_plan(model, vdep, rules=rules, gpu=point.gpu,
                          weights_gib=terms.weights_gib, activation_gib=terms.activation_gib,
                          non_torch_gib=terms.non_torch_gib, cudagraph_gib=terms.cudagraph_gib,
                          requests=workload[0], context_tokens=workload[1])
    if plan.totals.workers > 1:
        plan = replace(plan, notes=(*plan.notes, EP_NOTE))
    if point.deployment.disaggregation_mode is not DisaggMode.NULL:
        plan = replace(plan, notes=(*plan.notes, ROLE_NOTE))
    return plan


PLANNERS: Mapping[Engine, PointPlanner] = {
    Engine.SGLANG: PointPlanner(engine=Engine.SGLANG, default_rules=DEFAULT_RULES,
                                plan=_sglang),
    Engine.VLLM: PointPlanner(engine=Engine.VLLM, default_rules=DEFAULT_VLLM_RULES,
                              plan=_vllm),
}


def plan_point(engine: Engine, model: ModelArch | str, point: Point, *,
               rules: str | None = None, terms: MemoryTerms | None = None,
               workload: Workload = (None, None)) -> EnginePlan:
    """`engine`'s plan of `point` (its default rule set unless `rules`)."""
    planner = PLANNERS[engine]
    return planner.plan(model, point, rules or planner.default_rules, terms or MemoryTerms(),
                        workload)
