"""Prefill/decode splits as candidates of the SLO search (`recommend --trace … --pd`).

A split of R replicas of a layout is P prefill + (R − P) decode servers, P = 1 … R − 1, each
role planned as its own server (`--disaggregation-mode prefill|decode`) and replayed as
`simulate --prefill-replicas P --decode-replicas D` does (`pd.simulate_pd`): the prefill fleet
behind the router searched, the decode fleet least-load, the KV and state over the link.
Layouts with the host tier have no split (the PD replay keeps no host tier). A split is
saturated when either role's queue grows (`capacity.queue_grows`); its busy replicas are
not estimated (inf), so it is never ruled out without a replay.

>>> from kvledger.sim.fleet.slo import Layout
>>> [c.describe() for c in pd_candidates([Layout(gpu="H200", tp=8, host_tier=False)],
...                                      [RouterKind.ROUND_ROBIN], 3)]
['1 prefill + 1 decode × H200 tp 8, round-robin', '1 prefill + 2 decode × H200 tp 8, round-robin', '2 prefill + 1 decode × H200 tp 8, round-robin']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from kvledger.sglang.deploy import Deployment, DisaggMode
from kvledger.sglang.plan import SglangPlan, make_plan
from kvledger.sim.config import SimConfig
from kvledger.sim.fleet.capacity import queue_grows
from kvledger.sim.fleet.links import Link
from kvledger.sim.fleet.pd import simulate_pd
from kvledger.sim.fleet.routers import RouterKind
from kvledger.sim.fleet.slo import Candidate, Layout, Outcome
from kvledger.sim.latency import LatencyStats
from kvledger.sim.workload import Workload


def role_plans(model: str, base: Deployment, layout: Layout, *,
               rules: str) -> tuple[SglangPlan, SglangPlan]:
    """The layout's prefill and decode servers' plans (ValueError: SGLang refuses one)."""
    dep = replace(base, tp_size=layout.tp, enable_hierarchical_cache=False)
    return tuple(make_plan(model, replace(dep, disaggregation_mode=mode), gpu=layout.gpu,
                           rules=rules) for mode in (DisaggMode.PREFILL, DisaggMode.DECODE))


def pd_candidates(layouts: Sequence[Layout], routers: Sequence[RouterKind],
                  max_replicas: int) -> list[Candidate]:
    return [Candidate(layout=layout, replicas=r, router=k, prefill_replicas=p)
            for layout in layouts if not layout.host_tier
            for r in range(2, max_replicas + 1) for p in range(1, r) for k in routers]


def evaluate_pd(prefill: SglangPlan, decode: SglangPlan, workload: Workload,
                config: SimConfig, prefill_replicas: int, decode_replicas: int,
                router: RouterKind, link: Link, tick=None) -> Outcome:
    """One split's replay (a runner task: module level and pure)."""
    r = simulate_pd(prefill, decode, workload, config, prefill_replicas=prefill_replicas,
                    decode_replicas=decode_replicas, router=router, link=link)
    records = list(r.records)
    lat = LatencyStats.of(records, duration_ms=r.duration_ms) if records else None
    prompt = sum(q.prompt_tokens for q in records) or 1
    grows = any(queue_grows([rec for rep in fleet.replicas for rec in rep.requests])
                for fleet in (r.prefill, r.decode))
    if tick is not None:
        tick(len(records), len(workload.requests))
    return Outcome(requests=len(workload.requests), finished=len(records),
                   ttft_p95_ms=None if lat is None else lat.ttft_ms.p95,
                   tpot_p95_ms=None if lat is None else lat.tpot_ms.p95,
                   saturated=grows, queue_grows=grows, busy_replicas=float("inf"),
                   token_hit_rate=sum(q.hit_tokens for q in records) / prompt,
                   usable_hit_rate=sum(q.usable_hit_tokens for q in records) / prompt)
