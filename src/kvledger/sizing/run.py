"""Plan every point of a sweep: one row per deployment, deployment-wide totals.

A row's totals are its plan's, whichever engine made it (`EnginePlan.totals`: GPUs, workers,
running requests and tokens over all workers, HBM per pool over all ranks); each engine plans
the point through `kvledger.sizing.engines`. A row that cannot be planned carries the reason
(the error the plan raised, naming the flag) instead, and reading its numbers raises
`NotPlanned` with it.

>>> rows = sweep("glm-5.3-flash", Axes(tp=(8,), dp=(1, 8)), gpu_default="H200")
>>> [(r.totals.ranks, r.totals.workers, r.plan.capacity.binding.code) for r in rows]
[(8, 1, 'state_slots'), (8, 8, 'state_slots')]
>>> rows[1].totals.tokens > 8 * rows[0].totals.tokens // 2
True
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload

from kvledger.core.engines import Engine
from kvledger.core.plan import EnginePlan
from kvledger.core.runner import SERIAL, Runner, RunObserver, Task
from kvledger.core.terms import MemoryTerms
from kvledger.core.totals import DeploymentTotals
from kvledger.model.arch import ModelArch
from kvledger.model.config import load_model
from kvledger.sglang.deploy import Deployment
from kvledger.sglang.rules import DEFAULT_RULES
from kvledger.sizing.axes import Axes, Point
from kvledger.sizing.documents import sweep_json
from kvledger.sizing.engines import Workload, plan_point
from kvledger.vllm.rules import DEFAULT_VLLM_RULES


class NotPlanned(ValueError):
    """A row's numbers were read, but its point has no plan; the message says why."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepRow:
    """One deployment and engine: its plan (any engine's, `kvledger.core.plan.EnginePlan`)
    or why there is none (`error`). On a row without a plan, `totals` and `binding` raise
    `NotPlanned` with that reason and `requests_per_gpu` too; `ok` says which rows have one."""

    point: Point
    plan: EnginePlan | None
    error: str | None  # why the point cannot be planned (the engine's refusal, by flag)
    engine: str = "sglang"
    workload: Workload = (None, None)  # (requests, context_tokens)

    @property
    def ok(self) -> bool:
        return self.plan is not None

    def _plan(self) -> EnginePlan:
        if self.plan is None:
            raise NotPlanned(f"{self.engine} on {self.gpu or 'no GPU'} was not planned: "
                             f"{self.error}")
        return self.plan

    @property
    def totals(self) -> DeploymentTotals:
        return self._plan().totals  # replicas included

    @property
    def binding(self) -> str:
        """The binding constraint's machine code (SGLang: a plan/2 limit code; vLLM:
        kv_blocks or max_num_seqs)."""
        return self._plan().binding.code

    @property
    def notes(self) -> tuple[str, ...]:
        return self.plan.notes if self.plan else ()

    @property
    def gpu(self) -> str | None:
        return self.point.gpu

    @property
    def fits(self) -> bool | None:
        """The workload check's verdict; None without a workload or a plan."""
        return None if self.plan is None else self.plan.fits(*self.workload)

    @property
    def requests_per_gpu(self) -> float:
        tot = self.totals
        return tot.running_requests / tot.ranks


@dataclass(frozen=True, slots=True, kw_only=True)
class Sweep(Sequence[SweepRow]):
    """The rows of one sweep, in grid order (a sequence of `SweepRow`), and what was asked."""

    model: str  # as given
    rows: tuple[SweepRow, ...]
    engines: tuple[str, ...]
    rules: str  # the rule sets the rows use, comma-separated in engine order
    requests: int | None = None
    context_tokens: int | None = None

    @overload
    def __getitem__(self, index: int) -> SweepRow: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[SweepRow, ...]: ...

    def __getitem__(self, index: int | slice) -> SweepRow | tuple[SweepRow, ...]:
        return self.rows[index]

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[SweepRow]:
        return iter(self.rows)

    @property
    def notes(self) -> tuple[str, ...]:
        """Every assumption any row's plan made, each once, in row order."""
        return tuple(dict.fromkeys(n for r in self.rows for n in r.notes))

    def to_json(self, ignored_flags: tuple[str, ...] = ()) -> dict[str, Any]:
        """The `kvledger sweep --json` document (`kvledger.sizing.documents`)."""
        return sweep_json(self, ignored_flags=ignored_flags)


def sweep(model: str | ModelArch, axes: Axes, base: Deployment | None = None, *,
          rules: str = DEFAULT_RULES, gpu_default: str | None = None,
          available_gib: float | None = None, weights_gib: float | None = None,
          requests: int | None = None, context_tokens: int | None = None,
          engines: tuple[str, ...] = ("sglang",),
          vllm_rules: str = DEFAULT_VLLM_RULES,
          terms: MemoryTerms | None = None, runner: Runner = SERIAL,
          observer: RunObserver | None = None) -> Sweep:
    """Plan every point of `axes` over `base`, once per engine (rows of one point side by
    side); a point without a GPU uses `gpu_default`. `terms` are the memory terms a user
    knows (`available_gib`/`weights_gib` given alone fill them). Each row is an independent
    plan: `runner` (`kvledger.core.runner`) may make them at once, in the same order."""
    arch = load_model(model) if isinstance(model, str) else model
    workload = (requests, context_tokens)
    terms = terms or MemoryTerms(available_gib=available_gib, weights_gib=weights_gib)
    chosen = {Engine.SGLANG: rules, Engine.VLLM: vllm_rules}
    points = [Point(gpu=point.gpu or gpu_default, nodes=point.nodes,
                    deployment=point.deployment, skipped=point.skipped)
              for point in axes.points(base)]
    rows = plan_rows(arch, points, engines, chosen, terms, workload, runner, observer)
    return Sweep(model=model if isinstance(model, str) else arch.name, rows=tuple(rows),
                 engines=tuple(engines),
                 rules=",".join(chosen[Engine(e)] for e in dict.fromkeys(engines)),
                 requests=requests, context_tokens=context_tokens)


def plan_rows(arch: ModelArch, points: Sequence[Point], engines: Sequence[str],
              rules: dict[Engine, str], terms: MemoryTerms, workload: Workload,
              runner: Runner = SERIAL, observer: RunObserver | None = None) -> list[SweepRow]:
    """One row per point and engine (a point's engines side by side), planned on `runner`."""
    tasks = [Task(fn=_row, args=(Engine(e), arch, p, rules[Engine(e)], terms, workload),
                  label=f"{e} on {p.gpu or 'no GPU'}") for p in points for e in engines]
    return runner.run(tasks, observer)


def _row(engine: Engine, arch: ModelArch, point: Point, rules: str, terms: MemoryTerms,
         workload: Workload) -> SweepRow:
    if point.deployment is None:
        return SweepRow(point=point, plan=None, error=point.skipped, engine=engine.value,
                        workload=workload)
    try:
        plan = plan_point(engine, arch, point, rules=rules, terms=terms, workload=workload)
    except ValueError as exc:  # the engine's refusal or a flag it rejects: say which
        return SweepRow(point=point, plan=None, error=str(exc), engine=engine.value,
                        workload=workload)
    return SweepRow(point=point, plan=plan, error=None, engine=engine.value, workload=workload)
