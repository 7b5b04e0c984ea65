"""One store tier shared by a fleet: every replica's cache reads and writes the same tier.

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

`store_reuse` replays the fleet with it, with private tiers and without.

>>> from kvledger.cache.store_tier import StoreStats
>>> add_delta(StoreStats(restored_pages=2), StoreStats(restored_pages=5),
...           StoreStats(restored_pages=1)).restored_pages
6
"""

from __future__ import annotations

from dataclasses import fields

from kvledger.cache.store_tier import StoreStats


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
