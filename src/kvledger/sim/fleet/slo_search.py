"""The smallest fleet whose own replay of a workload meets an SLO, and why smaller ones fail.

Search space: every GPU asked for × tensor parallelism 1, 2, 4, 8 × SGLang's host tier off
and on (`--enable-hierarchical-cache`, its default ratio) — the layouts — × 1..max replicas
× every router asked for (one replica: no router). A layout SGLang would refuse (weights do
not fit, no room for the KV cache) is rejected with the planner's reason.

Smallest: fewest GPUs (replicas × tp), or with `Objective.COST` the lowest USD per hour
(GPUs × the GPU's price, `kvledger.sizing.prices`), the other breaking ties. Candidates are
replayed a level at a time, cheapest level first, every candidate of a level at once on the
runner; the search stops at the first level where one meets the SLO (`slo.Outcome.failures`).
Of those, the lowest TTFT p95 wins, then fewer replicas, then search order. Every cheaper
candidate was replayed or ruled out, so a tighter SLO never gets a smaller fleet.

With a link (`recommend --pd --link L`), every prefill/decode split of 2..max replicas of a
layout without the host tier is a candidate too (`slo_pd`), at the same GPUs as the
aggregated fleet of that size.

Ruled out without a replay: R replicas of a layout whose one-replica run keeps more than R
replicas busy (`capacity.Overload.busy_replicas`, the offered load after cache hits), the
definition of saturated — assuming R replicas do not hit the cache more than one does.

>>> candidate_key(Candidate(layout=Layout(gpu="H200", tp=4, host_tier=False), replicas=2,
...               router=RouterKind.ROUND_ROBIN), Objective.COST, {"H200": 4.5})
(36.0, 8)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from itertools import groupby

from kvledger.core.runner import SERIAL, Runner, RunObserver, Task
from kvledger.sglang.deploy import Deployment
from kvledger.sglang.plan import SglangPlan, make_plan
from kvledger.sim.config import SimConfig
from kvledger.sim.fleet.links import Link
from kvledger.sim.fleet.routers import RouterKind
from kvledger.sim.fleet.slo import Candidate, Layout, Outcome, Slo, evaluate
from kvledger.sim.fleet.slo_pd import evaluate_pd, pd_candidates, role_plans
from kvledger.sim.workload import Workload

TP_SIZES = (1, 2, 4, 8)
HOST_TIERS = (False, True)
MAX_SEARCH_REPLICAS = 8


class Objective(Enum):
    GPUS = "gpus"
    COST = "cost"


@dataclass(frozen=True, slots=True, kw_only=True)
class Trial:
    candidate: Candidate
    cost_usd_per_hour: float | None  # None: no price table (objective gpus)
    outcome: Outcome | None  # None: ruled out without a replay
    failures: tuple[str, ...]  # () when it meets the SLO

    @property
    def meets(self) -> bool:
        return self.outcome is not None and not self.failures


@dataclass(frozen=True, slots=True, kw_only=True)
class SloSearch:
    slo: Slo
    objective: Objective
    workload: str
    requests: int
    best: Trial | None
    plans: Mapping[Layout, SglangPlan]  # every layout that planned
    refused: tuple[tuple[Layout, str], ...]  # layouts SGLang would refuse, and why
    trials: tuple[Trial, ...]  # replayed or ruled out, cheapest first
    not_needed: int  # candidates above the chosen fleet's level, never replayed

    @property
    def replayed(self) -> int:
        return sum(t.outcome is not None for t in self.trials)

    def check_integrity(self) -> None:
        assert self.best is None or self.best.meets, "the chosen fleet must meet the SLO"
        assert all(t.candidate.layout in self.plans for t in self.trials)
        if self.best is not None:
            # nothing cheaper than the chosen fleet meets the SLO
            key = self.best.candidate.gpus if self.objective is Objective.GPUS \
                else self.best.cost_usd_per_hour
            assert not any(t.meets and _primary(t, self.objective) < key for t in self.trials)


def candidate_key(c: Candidate, objective: Objective,
                  prices: Mapping[str, float] | None) -> tuple[float, int]:
    cost = round(c.gpus * prices[c.layout.gpu], 6) if prices else 0.0
    return (c.gpus, cost) if objective is Objective.GPUS else (cost, c.gpus)


def _primary(t: Trial, objective: Objective) -> float:
    return t.candidate.gpus if objective is Objective.GPUS else t.cost_usd_per_hour or 0.0


def plan_layouts(model: str, base: Deployment, *, gpus: Sequence[str], rules: str,
                 tp_sizes: Sequence[int] = TP_SIZES, host_tiers: Sequence[bool] = HOST_TIERS,
                 weights_gib: float | None = None
                 ) -> tuple[dict[Layout, SglangPlan], list[tuple[Layout, str]]]:
    """Each layout's plan, or SGLang's reason to refuse it (`weights_gib`: the weights per
    rank when the user knows them, as `plan --weights-gib`)."""
    plans, refused = {}, []
    for gpu in gpus:
        for tp in tp_sizes:
            for host in host_tiers:
                layout = Layout(gpu=gpu, tp=tp, host_tier=host)
                dep = replace(base, tp_size=tp, enable_hierarchical_cache=host)
                try:
                    plans[layout] = make_plan(model, dep, gpu=gpu, rules=rules,
                                              weights_gib=weights_gib)
                except ValueError as exc:
                    refused.append((layout, str(exc)))
    return plans, refused


def _candidates(layouts: Sequence[Layout], routers: Sequence[RouterKind],
                max_replicas: int) -> list[Candidate]:
    out = []
    for layout in layouts:
        out.append(Candidate(layout=layout, replicas=1, router=RouterKind.ROUND_ROBIN))
        out += [Candidate(layout=layout, replicas=r, router=k)
                for r in range(2, max_replicas + 1) for k in routers]
    return out


def _ruled_out(c: Candidate, busy: Mapping[Layout, float]) -> str | None:
    b = busy.get(c.layout)
    if c.prefill_replicas is not None or c.replicas == 1 or b is None or not math.isfinite(b) or b <= c.replicas:
        return None
    return (f"saturated (not replayed): at 1 replica the offered load keeps {b:.2f} replicas "
            f"busy, more than {c.replicas}")


def search(model: str, base: Deployment, workload: Workload, slo: Slo, *,
           gpus: Sequence[str], rules: str, routers: Sequence[RouterKind] = tuple(RouterKind),
           max_replicas: int = MAX_SEARCH_REPLICAS, objective: Objective = Objective.GPUS,
           prices: Mapping[str, float] | None = None, tp_sizes: Sequence[int] = TP_SIZES,
           host_tiers: Sequence[bool] = HOST_TIERS, runner: Runner = SERIAL,
           observer: RunObserver | None = None,
           config_of: Callable[[SglangPlan], SimConfig] | None = None,
           weights_gib: float | None = None, link: Link | None = None) -> SloSearch:
    """The search of the module doc; every replay is a task on `runner`, its settings
    `config_of(plan)` (default: `SimConfig()`, `simulate`'s defaults). With `link`, every
    prefill/decode split over it is a candidate too (`slo_pd`)."""
    config_of = config_of or (lambda plan: SimConfig())
    plans, refused = plan_layouts(model, base, gpus=gpus, rules=rules, tp_sizes=tp_sizes,
                                  host_tiers=host_tiers, weights_gib=weights_gib)
    order = {layout: i for i, layout in enumerate(plans)}
    routes = {k: i for i, k in enumerate(routers)}
    cands = _candidates(list(plans), routers, max_replicas)
    roles: dict[Layout, tuple[SglangPlan, SglangPlan]] = {}
    if link is not None:
        for layout in (x for x in plans if not x.host_tier):
            try:
                roles[layout] = role_plans(model, base, layout, rules=rules)
            except ValueError as exc:
                refused.append((layout, f"prefill/decode roles: {exc}"))
        cands += pd_candidates(list(roles), routers, max_replicas)
    cands.sort(key=lambda c: (candidate_key(c, objective, prices)[0],
                              candidate_key(c, objective, prices)[1], order[c.layout],
                              c.replicas, c.prefill_replicas or 0, routes.get(c.router, -1)))
    price = (lambda c: round(c.gpus * prices[c.layout.gpu], 6)) if prices else (lambda c: None)
    busy: dict[Layout, float] = {}
    trials: list[Trial] = []
    best = None
    levels = [list(g) for _, g in groupby(cands, key=lambda c: candidate_key(
        c, objective, prices)[0])]
    done = 0
    for level in levels:
        run, ruled = [], {}
        for i, c in enumerate(level):
            if (why := _ruled_out(c, busy)) is not None:
                ruled[i] = why
            else:
                run.append(c)
        tasks = [Task(fn=evaluate, args=(plans[c.layout], workload, config_of(plans[c.layout]),
                                         c.replicas, c.router),
                      label=c.describe(), ticks=True, cost=float(c.replicas))
                 if c.prefill_replicas is None else
                 Task(fn=evaluate_pd, args=(*roles[c.layout], workload,
                                            config_of(plans[c.layout]), c.prefill_replicas,
                                            c.decode_replicas, c.router, link),
                      label=c.describe(), ticks=True, cost=float(c.replicas)) for c in run]
        outcomes = iter(runner.run(tasks, observer) if tasks else [])
        for i, c in enumerate(level):
            if i in ruled:
                trials.append(Trial(candidate=c, cost_usd_per_hour=price(c), outcome=None,
                                    failures=(ruled[i],)))
                continue
            out = next(outcomes)
            if c.replicas == 1 and c.prefill_replicas is None:
                busy[c.layout] = out.busy_replicas
            trials.append(Trial(candidate=c, cost_usd_per_hour=price(c), outcome=out,
                                failures=out.failures(slo, replicas=c.replicas)))
        done += len(level)
        meeting = [t for t in trials[-len(level):] if t.meets]
        if meeting:
            best = min(meeting, key=lambda t: (t.outcome.ttft_p95_ms, t.candidate.replicas))
            break
    result = SloSearch(slo=slo, objective=objective, workload=workload.name,
                       requests=len(workload.requests), best=best, plans=plans,
                       refused=tuple(refused), trials=tuple(trials),
                       not_needed=len(cands) - done)
    result.check_integrity()
    return result
