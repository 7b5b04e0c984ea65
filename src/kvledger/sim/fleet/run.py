"""A fleet's replay: R replicas of one plan, one router, one clock per replica.

Each replica is the single-rank replay (`kvledger.sim.replay.Replay`: its own cache facade in
accounting mode, its own step-time model). Requests are routed one by one in arrival order:
every replica first runs the steps that start before the arrival (`Replay.advance`), then the
router reads each replica's state (`routers.ReplicaView`) and the request joins the chosen
replica's queue. A replica's decode strides stop at the next fleet arrival (its horizon), as
a single rank's stop at its next arrival, so R = 1 replays exactly what `simulate` does.

Assumptions: replicas are identical (one plan); routing takes no time; the router's view is
the state at the end of the last step before the arrival; host tiers stay per replica, store
tiers too unless `shared_store` (one tier for the fleet, `shared_store`); attention DP is refused (one replica is one
rank).

>>> from kvledger.sglang.plan import make_plan
>>> from kvledger.sim.sources import load_workload
>>> w = load_workload(generator="shared-prompt", num_requests=40, seed=1)
>>> from kvledger.sglang.deploy import Deployment
>>> plan = make_plan("glm-5.3-flash", Deployment(tp_size=8), gpu="h200")
>>> f = simulate_fleet(plan, w,
...                    replicas=2, router=RouterKind.ROUND_ROBIN)
>>> [r.summary.counters.finished for r in f.replicas]
[20, 20]
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kvledger.sglang.plan import SglangPlan
from kvledger.sim.config import SimConfig
from kvledger.sim.fleet.probe import probe
from kvledger.sim.fleet.routers import ReplicaView, RouterKind, make_router
from kvledger.sim.fleet.shared_store import share_store
from kvledger.sim.replay import Progress, Replay, SimResult
from kvledger.sim.running import kv_total_tokens
from kvledger.sim.workload import Workload, WorkloadError

MAX_REPLICAS = 256


@dataclass(frozen=True, slots=True, kw_only=True)
class FleetResult:
    workload: Workload
    router: RouterKind
    replicas: tuple[SimResult, ...]
    replica_of: tuple[int, ...]  # per request, in workload order: the replica that got it
    wall_s: float
    timer: object  # the step-time model every replica used (Roofline or StepCost)
    timing: str


def _view(replay: Replay, keys, max_pages: int) -> ReplicaView:
    page = replay.page
    active = sum(kv_total_tokens(r.prompt_tokens, 0) // page for r in replay.pending)
    active += sum(r.prompt_tokens // page for r in replay.waiting)
    running = replay.decoding + ([replay.chunked] if replay.chunked else [])
    active += sum((r.prompt_tokens + r.generated_tokens) // page for r in running)
    pages = replay.cache.rows.pages.capacity
    tree = replay.cache.tree
    return ReplicaView(
        outstanding_requests=len(replay.pending) + len(replay.waiting) + replay.num_running,
        active_pages=active, kv_usage=replay.cache.own_pages / pages if pages else 0.0,
        probe=lambda: probe(tree, keys, max_pages=max_pages))


def simulate_fleet(plan: SglangPlan, workload: Workload, config: SimConfig | None = None, *,
                   replicas: int, router: RouterKind,
                   progress: Sequence[Progress] = (),
                   wrap_timer: Callable[[object], object] | None = None,
                   shared_store: bool = False) -> FleetResult:
    """Replay `workload` on `replicas` copies of one rank of `plan` behind `router`;
    `wrap_timer` replaces each replica's step-time model by `wrap_timer(model)` (a decode
    server's, `pd.ReceivedKv`); `shared_store`: the replicas share one store tier
    (`config.l3`, `shared_store.share_store`) instead of one each."""
    if not 1 <= replicas <= MAX_REPLICAS:
        raise WorkloadError(f"--replicas {replicas}: expected 1..{MAX_REPLICAS}")
    if plan.layout.deployment.attn_dp_size > 1:
        raise WorkloadError("--replicas: with attention DP a rank already shares the requests; "
                            "give a deployment without --enable-dp-attention")
    config = config or SimConfig()
    start = time.perf_counter()
    empty = Workload(name=workload.name, requests=())
    fleet = [Replay(plan, empty, config, ()) for _ in range(replicas)]
    if shared_store:
        if config.l3 is None:
            raise WorkloadError("a shared store tier needs --l3-size")
        share_store(fleet)
    if wrap_timer is not None:
        for replay in fleet:
            replay.timer = wrap_timer(replay.timer)
    page = fleet[0].page
    chooser = make_router(router, replicas, page)
    keyer = fleet[0].keyer
    for replay in fleet[1:]:
        replay.keyer = keyer  # one interning of straddling pages: keys agree across replicas
    replica_of = []
    total = len(workload.requests)
    for n, request in enumerate(workload.requests):
        for replay in fleet:
            replay.horizon_ms = request.arrival_ms
            replay.advance(request.arrival_ms)
        max_pages = (request.prompt_tokens - 1) // page
        keys = keyer.keys(request)
        views = [_view(replay, keys, max_pages) for replay in fleet]
        prompt_keys = keys[: request.prompt_tokens // page]
        pick = chooser.choose(request, prompt_keys, views)
        fleet[pick].offer(request)
        replica_of.append(pick)
        for observer in progress:
            observer(n, total)
    for replay in fleet:
        replay.horizon_ms = float("inf")
        replay.advance()
    wall_s = time.perf_counter() - start
    results = tuple(replay.finish(wall_s) for replay in fleet)
    for observer in progress:
        observer(total, total)
    return FleetResult(workload=workload, router=router, replicas=results,
                       replica_of=tuple(replica_of), wall_s=wall_s, timer=fleet[0].timer,
                       timing=fleet[0].timing)

