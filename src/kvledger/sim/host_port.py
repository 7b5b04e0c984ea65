"""The simulator's seam to a host (DRAM) tier: an object plugged in, never a flag.

The replay's cache (`kvledger.sim.device_cache`) builds the tree and the device allocators,
then hands them to a `HostTierFactory`; the tier it gets back is the only way device memory
leaves the tree. `NoHostTier` is the null object used when hierarchical caching is off:
device eviction drops entries for good, nothing is backed up or loaded back, and `stats()`
is None so reports say "not available" instead of printing zeros that look measured. The
real tier (`kvledger.sim.host_tier`) adapts `kvledger.host.HiCacheController`.

Contract for an implementation:
- `evict_device` frees at least what was asked from device (backing victims up first under
  write_back), returns the freed indices to the device allocators itself, and reports them;
- `after_insert` / `after_hit` tell the write policy that a node was inserted or reused
  (write_through backs up on insert, write_through_selective on the second hit);
- `loadback` brings the host-only part of a match to device when there is room, allocating
  device pages and a state slot through the same allocators (evicting device LRU entries if
  short), and returns the match as it stands afterwards (the input match when nothing moved);
- `device_evictions` counts every device eviction, including those a loadback made room by;
- `usage` is sampled once per recorded row; `stats` reports the totals; `check_integrity`
  checks the tier's own conservation laws (both tiers against the tree).

Units are the tree's: the simulator's tree keys whole pages, so "pages" here are tree keys.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from kvledger.host.policy import BackupPolicy
from kvledger.pools.ids import StateSlotAllocator
from kvledger.pools.paged import PagedTokenAllocator
from kvledger.tree.node import Node, Tier
from kvledger.tree.radix import RadixTree
from kvledger.tree.results import EvictResult, InsertResult, MatchResult


class Evictions(NamedTuple):
    pages: int  # FULL KV pages dropped from device
    slots: int  # MAMBA states dropped from device


class HostUsage(NamedTuple):
    """One sample of the host tier (zeros without one)."""

    pages_used: int  # host KV pages holding a copy (or allocated for one in flight)
    slots_used: int  # host state slots likewise
    backup_pages: int  # cumulative
    loadback_pages: int  # cumulative


NO_USAGE = HostUsage(pages_used=0, slots_used=0, backup_pages=0, loadback_pages=0)


@dataclass(frozen=True, slots=True, kw_only=True)
class HostStats:
    """Totals of a replay's host tier. Bytes come from the host pools' geometry (one host
    page holds one device page of every full layer's KV rows and index keys; one host state
    slot one whole state), so they are exact, not estimates."""

    policy: BackupPolicy
    capacity_pages: int
    capacity_slots: int
    page_bytes: int  # host (= device) bytes of one page: KV rows + index keys, all layers
    slot_bytes: int  # bytes of one state slot, all linear layers
    backup_pages: int
    backup_slots: int
    backup_bytes: int
    loadback_pages: int
    loadback_slots: int
    loadback_bytes: int
    host_evicted_pages: int
    host_evicted_slots: int
    loadback_hit_tokens: int  # prompt tokens admitted requests took from host, not recomputed
    peak_pages_used: int
    peak_slots_used: int

    @property
    def capacity_bytes(self) -> int:
        return self.capacity_pages * self.page_bytes + self.capacity_slots * self.slot_bytes


class HostTier(ABC):
    @abstractmethod
    def evict_device(self, *, full_pages: int, mamba_slots: int) -> EvictResult:
        """Make room on device; the freed indices are back in the allocators already."""

    @abstractmethod
    def after_insert(self, result: InsertResult) -> None:
        """A node was inserted or extended on device."""

    @abstractmethod
    def after_hit(self, node: Node) -> None:
        """An admitted request reuses the prefix ending at `node`."""

    @abstractmethod
    def loadback(self, match: MatchResult) -> MatchResult:
        """Bring the host-only part of `match` to device if there is room; the match after."""

    @abstractmethod
    def device_evictions(self) -> Evictions:
        """Every device eviction so far."""

    @abstractmethod
    def usage(self) -> HostUsage:
        """Host occupancy and cumulative traffic now."""

    @abstractmethod
    def stats(self) -> HostStats | None:
        """Totals; None when there is no host tier."""

    @abstractmethod
    def check_integrity(self) -> None:
        """The tier's conservation laws; RuntimeError (or IntegrityError) when broken."""


HostTierFactory = Callable[[RadixTree, PagedTokenAllocator, StateSlotAllocator], HostTier]


class NoHostTier(HostTier):
    """Hierarchical caching off: the device is the only tier."""

    def __init__(self, tree: RadixTree, pages: PagedTokenAllocator,
                 slots: StateSlotAllocator) -> None:
        self.tree, self.pages, self.slots = tree, pages.pages, slots
        self.evicted_pages = self.evicted_slots = 0

    def evict_device(self, *, full_pages: int, mamba_slots: int) -> EvictResult:
        result = self.tree.evict(full_tokens=full_pages, mamba_slots=mamba_slots)
        self.pages.free(result.full_indices)
        self.slots.free(result.mamba_slots)
        self.evicted_pages += result.num_full_tokens
        self.evicted_slots += result.num_mamba_slots
        return result

    def after_insert(self, result: InsertResult) -> None:
        return None

    def after_hit(self, node: Node) -> None:
        return None

    def loadback(self, match: MatchResult) -> MatchResult:
        return match

    def device_evictions(self) -> Evictions:
        return Evictions(pages=self.evicted_pages, slots=self.evicted_slots)

    def usage(self) -> HostUsage:
        return NO_USAGE

    def stats(self) -> HostStats | None:
        return None

    def check_integrity(self) -> None:
        """Nothing ever reached the host: the tree holds no host value."""
        host = self.tree.sizes(Tier.HOST)
        if host.full_tokens or host.mamba_slots:
            raise RuntimeError(f"device-only replay: the tree holds {host.full_tokens} host KV "
                               f"pages and {host.mamba_slots} host states")
