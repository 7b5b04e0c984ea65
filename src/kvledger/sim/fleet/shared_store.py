"""One store tier shared by a fleet, and the fleet's reuse with it, with private ones, without.

Mooncake Store (Mooncake, FAST '25) and a Redis/Valkey tier are one pool that every
server writes to and reads from, so a prefix one replica computed is a store hit on every
other. Here every replica's cache keeps its own device tree and host tier and goes through
the same store tier object (`kvledger.cache.l3_tier.L3Tier` in accounting mode): what one
replica writes through, another restores before admission, through its own facade
(`HybridCache.adopt_restored`), as a device hit. Prefix ids are content hashes of the page
keys (one fleet keyer), so replicas name a prefix alike.

Each replica holds a `StoreView`: it forwards every call to the shared tier and keeps that
replica's share of the tier's counters, so a replica's step waits its own reads only (the
replay times a step's reads by the growth of `stats.read_wait_ms`).

`store_reuse` replays the fleet three ways on the same total store capacity C: no store
tier; R private tiers of C / R each; one shared tier of C.

>>> from kvledger.cache.store_tier import StoreStats
>>> add_delta(StoreStats(restored_pages=2), StoreStats(restored_pages=5),
...           StoreStats(restored_pages=1)).restored_pages
6
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from kvledger.cache.store_tier import StoreStats
from kvledger.sglang.plan import SglangPlan
from kvledger.sim.config import SimConfig
from kvledger.sim.fleet.routers import RouterKind
from kvledger.sim.workload import Workload


def _copy(stats: StoreStats) -> StoreStats:
    return StoreStats(**{f.name: getattr(stats, f.name) for f in fields(StoreStats)})


def add_delta(own: StoreStats, after: StoreStats, before: StoreStats) -> StoreStats:
    """`own` plus what `after` has over `before`, field by field (in place)."""
    for f in fields(StoreStats):
        setattr(own, f.name, getattr(own, f.name) + getattr(after, f.name)
                - getattr(before, f.name))
    return own


class StoreView:
    """One replica's handle on the fleet's shared store tier (a `StoreTier`)."""

    def __init__(self, shared) -> None:
        self.shared = shared
        self.stats = StoreStats()

    def _mine(self, fn, *args):
        before = _copy(self.shared.stats)
        out = fn(*args)
        add_delta(self.stats, self.shared.stats, before)
        return out

    @property
    def groups(self):
        return self.shared.groups

    @property
    def page_tokens(self) -> int:
        return self.shared.page_tokens

    def fits(self, **shape) -> str | None:
        return self.shared.fits(**shape)

    def prefetch(self, cache, keys) -> int:
        return self._mine(self.shared.prefetch, cache, keys)

    def on_insert(self, node) -> None:
        self._mine(self.shared.on_insert, node)

    def on_hit(self, node) -> None:
        self._mine(self.shared.on_hit, node)

    def before_evict(self) -> None:
        self._mine(self.shared.before_evict)

    def after_evict(self, tree, freed_indices, freed_slots) -> None:
        self._mine(self.shared.after_evict, tree, freed_indices, freed_slots)

    def flush(self, timeout_s: float = 60.0) -> None:
        self._mine(self.shared.flush, timeout_s)

    def close(self) -> None:
        self.shared.close()

    def check_integrity(self) -> None:
        self.shared.check_integrity()


def share_store(replays) -> None:
    """Point every replay's cache at the first one's store tier, each through a view."""
    shared = replays[0].cache.store
    for replay in replays:
        replay.cache.store = StoreView(shared)


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
    from kvledger.sim.fleet.run import simulate_fleet
    from kvledger.sim.fleet.summary import summarize

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
