"""The host tier as the facade sees it: one protocol (`HostTier`) and its null object.

`HybridCache` never asks whether a host tier exists: every device eviction, insert, hit and
loadback goes through `HostTier`. Two implementations: `NoHostTier` (hierarchical caching
off: eviction drops device copies for good, nothing is backed up, every match is a device
hit) and `kvledger.cache.hicache_tier.HiCacheTier` (SGLang's HiCache: `HiCacheController`
with its write policies, in real bytes or in accounting mode).

Units are the tree's: tokens when the tree keys tokens (real bytes), pages when it keys
whole pages (accounting).

>>> import numpy as np
>>> from kvledger.pools.ids import StateSlotAllocator
>>> from kvledger.pools.paged import PagedTokenAllocator
>>> from kvledger.tree import RadixTree
>>> tokens, states = PagedTokenAllocator(num_pages=2, page_tokens=4), StateSlotAllocator(num_slots=2)
>>> tree = RadixTree(page_size=4)
>>> tier = NoHostTier(tree, tokens, states)
>>> node = tree.insert(np.arange(4), tokens.alloc(4), int(states.alloc(1)[0])).node
>>> tier.loadback(tree.match_prefix(np.arange(4))).status.value
'already on device'
>>> tier.evict_device(full_tokens=4).num_full_tokens, tokens.num_free_pages, states.num_free
(4, 2, 2)
>>> tier.device_evictions(), tier.stats() is None
(Evictions(full=4, states=1), True)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple, Protocol

from kvledger.host.results import LoadbackResult, LoadStatus
from kvledger.tree import EvictResult, InsertResult, LockReceipt, MatchResult, Node, RadixTree, Tier

if TYPE_CHECKING:
    from kvledger.cache.host_stats import HostStats
    from kvledger.pools.ids import StateSlotAllocator
    from kvledger.pools.paged import PagedTokenAllocator


class Evictions(NamedTuple):
    full: int  # FULL KV dropped from device, in tree units (tokens or pages)
    states: int  # MAMBA states dropped from device


class HostUsage(NamedTuple):
    """One sample of the host tier (zeros without one), in tree units."""

    pages_used: int  # host KV units holding a copy (or allocated for one in flight)
    slots_used: int  # host state slots likewise
    backup_pages: int  # cumulative
    loadback_pages: int  # cumulative


NO_USAGE = HostUsage(pages_used=0, slots_used=0, backup_pages=0, loadback_pages=0)


class HostTier(Protocol):
    """What the facade calls on a host tier. Synchronous: every call is done when it returns."""

    def on_insert(self, result: InsertResult) -> object:
        """A tree insert just happened (`result` as the tree returned it). The write policy
        counts a hit on the path and backs up what is due (write_through: everything)."""

    def on_hit(self, node: Node) -> object:
        """An admitted request reuses the cached prefix ending at `node`
        (write_through_selective backs a node up on its second hit)."""

    def evict_device(self, *, full_tokens: int = 0, mamba_slots: int = 0) -> EvictResult:
        """Free at least `full_tokens` FULL units and `mamba_slots` states from device, LRU
        first, unlocked entries only (write_back backs victims up first). The freed indices
        are back in the device allocators when this returns; the result lists them."""

    def loadback(self, match: MatchResult, *, request_slot: int | None = None) -> LoadbackResult:
        """Make `match.best_match_node` usable on device: copy host-only KV (root first) and
        its state back, allocating through the device allocators (evicting device LRU entries
        when short). On NO_ROOM / FAILED the result is the device part of the match only."""

    def device_evictions(self) -> Evictions:
        """Every device eviction so far, including those a loadback made room by."""

    def usage(self) -> HostUsage:
        """Host occupancy and cumulative traffic now (sampled once per recorded row)."""

    def stats(self) -> HostStats | None:
        """Totals for a report; None when there is no host tier (reports then say so)."""

    def check_integrity(self, request_receipts: Iterable[LockReceipt] | None = None) -> None:
        """The tier's conservation laws (both tiers against the tree); with the running
        requests' receipts, also that every outstanding tree lock has an owner (a request, or
        a transfer in flight). Raises when broken."""

    def serves(self, tree: RadixTree, tokens: PagedTokenAllocator,
               states: StateSlotAllocator | None) -> bool:
        """Whether the tier acts on exactly this tree and these device allocators."""


class NoHostTier:
    """Hierarchical caching off: the device is the only tier (the null `HostTier`)."""

    def __init__(self, tree: RadixTree, tokens: PagedTokenAllocator,
                 states: StateSlotAllocator | None) -> None:
        self.tree, self.tokens, self.states = tree, tokens, states
        self.evicted_full = self.evicted_states = 0

    def on_insert(self, result: InsertResult) -> None:
        return None

    def on_hit(self, node: Node) -> None:
        return None

    def evict_device(self, *, full_tokens: int = 0, mamba_slots: int = 0) -> EvictResult:
        result = self.tree.evict(full_tokens=full_tokens, mamba_slots=mamba_slots)
        self.tokens.free(result.full_indices)
        if self.states is not None:
            self.states.free(result.mamba_slots)
        self.evicted_full += result.num_full_tokens
        self.evicted_states += result.num_mamba_slots
        return result

    def loadback(self, match: MatchResult, *, request_slot: int | None = None) -> LoadbackResult:
        node = match.last_device_node
        if node is not match.best_match_node:
            raise RuntimeError("device-only tree: a match reaches past its last device node")
        return LoadbackResult(status=LoadStatus.DEVICE_HIT, node=node,
                              device_indices=match.device_indices, mamba_slot=node.mamba.value,
                              loaded_tokens=0, loaded_state=False, request_slot=request_slot)

    def device_evictions(self) -> Evictions:
        return Evictions(full=self.evicted_full, states=self.evicted_states)

    def serves(self, tree: RadixTree, tokens: PagedTokenAllocator,
               states: StateSlotAllocator | None) -> bool:
        return self.tree is tree and self.tokens is tokens and self.states is states

    def usage(self) -> HostUsage:
        return NO_USAGE

    def stats(self) -> None:
        return None

    def check_integrity(self, request_receipts: Iterable[LockReceipt] | None = None) -> None:
        """The tree's own laws, nothing ever reached the host, and (given the requests'
        receipts) every outstanding lock is one of theirs: nothing else locks."""
        self.tree.check_integrity()
        if request_receipts is not None:
            owned = {r.receipt_id for r in request_receipts}
            outstanding = set(self.tree.receipts)
            if owned != outstanding:
                raise RuntimeError(f"device-only cache: {len(outstanding - owned)} tree locks "
                                   f"without an owner, {len(owned - outstanding)} receipts "
                                   "already unlocked")
        host = self.tree.sizes(Tier.HOST)
        if host.full_tokens or host.mamba_slots:
            raise RuntimeError(f"device-only cache: the tree holds {host.full_tokens} host KV "
                               f"units and {host.mamba_slots} host states")
