"""The store tier (L3) in a replay: the facade's own store tier, in accounting mode.

With ``--l3-size`` the replay's cache (`kvledger.cache.accounting.accounting_cache`) carries
`kvledger.cache.l3_tier.L3Tier` over an `kvledger.store.accounting.AccountingStore` — the
tier `kvledger verify --workload l3-*` runs in real bytes, with object sizes instead of
bytes. So the simulator's third tier is what ``verify`` proves:

    write    every prefix the tree caches is written through as one object group (its
             pages past the deepest group already written, its state, a manifest), queued:
             its put time is counted, not waited for
    restore  before admission matches, when the store holds a deeper prefix than device +
             host (≤ prompt − 1 tokens, whole pages, manifests chained down to the device
             hit) and the device has room, it is read into fresh pages and a state slot and
             inserted: the request sees it as a device hit, and the step that admits it
             waits the read (latency per round trip + bytes / bandwidth)

This summary adds the tier's counts (restores, lost and broken groups, room refusals) to
the accounting store's (objects, bytes, LRU evictions, transfer time).

>>> from kvledger.store.backend import BackendKind
>>> L3Config(capacity_bytes=1 << 30, backend=BackendKind.REDIS).link().get_gbps
0.3
"""

from __future__ import annotations

from dataclasses import dataclass

from kvledger.cache.l3_tier import L3Tier
from kvledger.store.accounting import AccountingStore
from kvledger.store.backend import BackendKind
from kvledger.store.link import L3Config

__all__ = ["L3Config", "StoreSummary", "store_summary"]


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreSummary:
    backend: BackendKind
    capacity_bytes: int
    used_bytes: int
    objects: int
    groups: int
    put_groups: int
    put_bytes: int
    put_ms: float  # write time the store spent (queued, not waited for)
    refused_groups: int  # larger than the whole store
    evicted_groups: int
    restores: int  # groups restored from the store into the device tree
    restored_tokens: int
    get_bytes: int
    get_ms: float  # read time admissions waited (restores and lookups that found nothing)
    reads: int  # lookups tried: the store might hold more than device + host
    no_room: int  # a deeper prefix the device could not take then (not read, or dropped)
    lost_groups: int  # written groups the store had evicted when a read looked for them
    broken_groups: int  # groups found cut from the device hit (a group below them evicted)
    timeouts: int  # reads slower than the prefetch timeout (recomputed)


def store_summary(tier: L3Tier) -> StoreSummary:
    """The run's store tier, after checking its conservation laws."""
    store, st = tier.groups, tier.stats
    assert isinstance(store, AccountingStore), "the simulator's store tier is in accounting mode"
    tier.flush()
    tier.check_integrity()
    store.check_integrity()
    return StoreSummary(
        backend=store.kind, capacity_bytes=store.capacity_bytes, used_bytes=store.used_bytes,
        objects=store.objects, groups=len(store.groups), put_groups=store.put_groups,
        put_bytes=store.put_bytes, put_ms=round(store.put_ms, 3),
        refused_groups=store.refused_groups, evicted_groups=store.evicted_groups,
        restores=st.restored_groups, restored_tokens=st.restored_pages * tier.page_tokens,
        get_bytes=store.get_bytes, get_ms=round(st.read_wait_ms, 3), reads=st.prefetches,
        no_room=st.no_room, lost_groups=st.lost_groups, broken_groups=st.broken_groups,
        timeouts=st.timeouts)
