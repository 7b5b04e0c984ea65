"""A fleet's reuse by store tier: none, R private tiers, one shared tier (`shared_store`).

The three replays keep the same total store capacity C, so only sharing differs:

    no store tier          the replicas' device (and host) caches alone
    R private tiers        each replica its own tier of C / R
    one shared tier        every replica reads and writes one tier of C (Mooncake Store's
                           global cache, the FAST '25 paper's "global" setup)

Reported per replay: the fleet's token and usable hit (store restores count as device
hits), the tokens restored from the store tier(s), TTFT p95 and whether it saturated.

>>> ReuseRow(label="no store tier", token_hit_rate=0.5, usable_hit_rate=0.4,
...          restored_tokens=0, ttft_p95_ms=10.0, saturated=False).restored_tokens
0
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kvledger.sglang.plan import SglangPlan
from kvledger.sim.config import SimConfig
from kvledger.sim.fleet.routers import RouterKind
from kvledger.sim.fleet.run import simulate_fleet
from kvledger.sim.fleet.summary import summarize
from kvledger.sim.workload import Workload


@dataclass(frozen=True, slots=True, kw_only=True)
class ReuseRow:
    label: str  # "no store tier", "4 private tiers of 16 GiB", "one shared tier of 64 GiB"
    token_hit_rate: float
    usable_hit_rate: float
    restored_tokens: int  # read back from the store tier(s), fleet-wide
    ttft_p95_ms: float | None
    saturated: bool


def store_reuse(plan: SglangPlan, workload: Workload, config: SimConfig, *, replicas: int,
                router: RouterKind, progress=()) -> tuple[tuple[ReuseRow, ...], object]:
    """The three replays of the module doc, `config.l3` the shared tier (C); and the shared
    run's `FleetResult`."""
    assert config.l3 is not None, "store_reuse needs --l3-size"
    total = config.l3.capacity_bytes
    private = replace(config.l3, capacity_bytes=total // replicas)
    gib = 2**30
    runs = (("no store tier", replace(config, l3=None), False),
            (f"{replicas} private tiers of {private.capacity_bytes / gib:g} GiB",
             replace(config, l3=private), False),
            (f"one shared tier of {total / gib:g} GiB", config, True))
    rows = []
    for label, cfg, shared in runs:
        fleet = simulate_fleet(plan, workload, cfg, replicas=replicas, router=router,
                               shared_store=shared, progress=progress)
        s = summarize(fleet, chunk_tokens=cfg.chunked_prefill_tokens)
        restored = sum(r.store.restored_tokens for r in s.replicas if r.store is not None)
        rows.append(ReuseRow(label=label, token_hit_rate=s.token_hit_rate,
                             usable_hit_rate=s.usable_hit_rate, restored_tokens=restored,
                             ttft_p95_ms=None if s.latency is None else s.latency.ttft_ms.p95,
                             saturated=s.overload.saturated))
    return tuple(rows), fleet
