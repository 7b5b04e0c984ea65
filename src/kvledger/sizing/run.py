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

from kvledger.capacity import DeploymentTotals
from kvledger.deploy import Deployment
from kvledger.model.arch import ModelArch
from kvledger.model.config import load_model
from kvledger.plan import Plan, make_plan
from kvledger.rules import DEFAULT_RULES
from kvledger.sizing.axes import Axes, Point


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepRow:
    point: Point
    plan: Plan | None
    error: str | None  # why the point cannot be planned

    @property
    def ok(self) -> bool:
        return self.plan is not None

    @property
    def totals(self) -> DeploymentTotals:
        assert self.plan is not None, f"no plan: {self.error}"
        return self.plan.capacity.totals

    @property
    def gpu(self) -> str | None:
        return self.point.gpu

    @property
    def fits(self) -> bool | None:
        """The workload check's verdict; None without a workload or a plan."""
        if self.plan is None or self.plan.workload is None:
            return None
        return self.plan.workload.fits

    @property
    def requests_per_gpu(self) -> float:
        tot = self.totals
        return tot.running_requests / tot.ranks


def sweep(model: str | ModelArch, axes: Axes, base: Deployment | None = None, *,
          rules: str = DEFAULT_RULES, gpu_default: str | None = None,
          available_gib: float | None = None, weights_gib: float | None = None,
          requests: int | None = None, context_tokens: int | None = None) -> list[SweepRow]:
    """Plan every point of `axes` over `base`; a point without a GPU uses `gpu_default`."""
    arch = load_model(model) if isinstance(model, str) else model
    rows = []
    for point in axes.points(base):
        gpu = point.gpu or gpu_default
        point = Point(gpu=gpu, nodes=point.nodes, deployment=point.deployment,
                      skipped=point.skipped)
        if point.deployment is None:
            rows.append(SweepRow(point=point, plan=None, error=point.skipped))
            continue
        try:
            plan = make_plan(arch, point.deployment, rules=rules, gpu=gpu,
                             available_gib=None if gpu else available_gib,
                             weights_gib=weights_gib, requests=requests,
                             context_tokens=context_tokens)
        except ValueError as exc:  # CapacityError, DeploymentError, GpuError: say which
            rows.append(SweepRow(point=point, plan=None, error=str(exc)))
            continue
        rows.append(SweepRow(point=point, plan=plan, error=None))
    return rows
