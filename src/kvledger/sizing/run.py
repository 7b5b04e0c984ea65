"""Plan every point of a sweep: one row per deployment, deployment-wide totals.

A row's totals are its plan's (`CapacityPlan.totals`: GPUs, attention-DP workers, running
requests and tokens over all workers, HBM per pool over all ranks); a row that cannot be
planned carries the reason (the error the plan raised, naming the flag) instead.

>>> rows = sweep("glm-5.3-flash", Axes(tp=(8,), dp=(1, 8)), gpu_default="H200")
>>> [(r.totals.ranks, r.totals.workers, r.plan.capacity.binding.code) for r in rows]
[(8, 1, 'state_slots'), (8, 8, 'state_slots')]
>>> rows[1].totals.tokens > 8 * rows[0].totals.tokens // 2
True
"""

from __future__ import annotations

from dataclasses import dataclass

from kvledger.model.arch import ModelArch
from kvledger.model.config import load_model
from kvledger.sglang.capacity import DeploymentTotals
from kvledger.sglang.deploy import Deployment
from kvledger.sglang.plan import Plan, make_plan
from kvledger.sglang.rules import DEFAULT_RULES
from kvledger.sizing.axes import Axes, Point
from kvledger.sizing.vllm_point import (
    EP_NOTE,
    vllm_binding,
    vllm_deployment,
    vllm_fits,
    vllm_totals,
)
from kvledger.vllm.plan import VllmPlan, make_vllm_plan
from kvledger.vllm.rules import DEFAULT_VLLM_RULES


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepRow:
    point: Point
    plan: Plan | None
    error: str | None  # why the point cannot be planned (the engine's refusal, by flag)
    engine: str = "sglang"
    vllm_plan: VllmPlan | None = None  # engine "vllm": the plan of the point's vLLM flags
    workload: tuple[int | None, int | None] = (None, None)  # (requests, context_tokens)

    @property
    def ok(self) -> bool:
        return self.plan is not None or self.vllm_plan is not None

    @property
    def totals(self) -> DeploymentTotals:
        if self.vllm_plan is not None:
            return vllm_totals(self.vllm_plan)
        assert self.plan is not None, f"no plan: {self.error}"
        return self.plan.capacity.totals  # replicas included

    @property
    def binding(self) -> str:
        """The binding constraint's machine code (SGLang: a plan/2 limit code)."""
        if self.vllm_plan is not None:
            return vllm_binding(self.vllm_plan)
        assert self.plan is not None, f"no plan: {self.error}"
        return self.plan.capacity.binding.code

    @property
    def notes(self) -> tuple[str, ...]:
        if self.vllm_plan is not None:
            return (*self.vllm_plan.notes, EP_NOTE) if self.totals.workers > 1 \
                else self.vllm_plan.notes
        return self.plan.notes if self.plan else ()

    @property
    def gpu(self) -> str | None:
        return self.point.gpu

    @property
    def fits(self) -> bool | None:
        """The workload check's verdict; None without a workload or a plan."""
        if self.vllm_plan is not None:
            return vllm_fits(self.vllm_plan, *self.workload)
        if self.plan is None or self.plan.workload is None:
            return None
        return self.plan.workload.fits

    @property
    def requests_per_gpu(self) -> float:
        tot = self.totals
        return tot.running_requests / tot.ranks


def _vllm_row(arch: ModelArch, point: Point, rules: str, weights_gib: float | None,
              workload: tuple[int | None, int | None]) -> SweepRow:
    if point.gpu is None:
        return SweepRow(point=point, plan=None, engine="vllm", workload=workload,
                        error="--engine vllm: needs --gpu (vLLM sizes its pool from the GPU's "
                              "memory × --gpu-memory-utilization)")
    try:
        vdep = vllm_deployment(point.deployment, workload[1])
        plan = make_vllm_plan(arch, vdep, rules=rules, gpu=point.gpu, weights_gib=weights_gib)
    except ValueError as exc:  # vLLM's start-up refusal or a flag it rejects: say which
        return SweepRow(point=point, plan=None, engine="vllm", workload=workload,
                        error=str(exc))
    return SweepRow(point=point, plan=None, error=None, engine="vllm", vllm_plan=plan,
                    workload=workload)


def sweep(model: str | ModelArch, axes: Axes, base: Deployment | None = None, *,
          rules: str = DEFAULT_RULES, gpu_default: str | None = None,
          available_gib: float | None = None, weights_gib: float | None = None,
          requests: int | None = None, context_tokens: int | None = None,
          engines: tuple[str, ...] = ("sglang",),
          vllm_rules: str = DEFAULT_VLLM_RULES) -> list[SweepRow]:
    """Plan every point of `axes` over `base`, once per engine (rows of one point side by
    side); a point without a GPU uses `gpu_default`."""
    arch = load_model(model) if isinstance(model, str) else model
    workload = (requests, context_tokens)
    rows = []
    for point in axes.points(base):
        gpu = point.gpu or gpu_default
        point = Point(gpu=gpu, nodes=point.nodes, deployment=point.deployment,
                      skipped=point.skipped)
        for engine in engines:
            if point.deployment is None:
                rows.append(SweepRow(point=point, plan=None, error=point.skipped, engine=engine,
                                     workload=workload))
            elif engine == "vllm":
                rows.append(_vllm_row(arch, point, vllm_rules, weights_gib, workload))
            else:
                rows.append(_sglang_row(arch, point, rules, available_gib, weights_gib,
                                        workload))
    return rows


def _sglang_row(arch: ModelArch, point: Point, rules: str, available_gib: float | None,
                weights_gib: float | None, workload: tuple[int | None, int | None]) -> SweepRow:
    gpu = point.gpu
    requests, context_tokens = workload
    try:
        plan = make_plan(arch, point.deployment, rules=rules, gpu=gpu,
                         available_gib=None if gpu else available_gib,
                         weights_gib=weights_gib, requests=requests,
                         context_tokens=context_tokens)
    except ValueError as exc:  # CapacityError, DeploymentError, GpuError: say which
        return SweepRow(point=point, plan=None, error=str(exc), workload=workload)
    return SweepRow(point=point, plan=plan, error=None, workload=workload)
