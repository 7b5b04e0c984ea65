"""The simulator's seam to a host (DRAM) tier: an object plugged in, never a flag.

The replay calls these four methods and nothing else of the host tier. `NoHostTier` is the
null object used when hierarchical caching is off (or not available in this build): device
eviction goes straight to the tree, nothing is backed up or loaded back, and `stats()` is
None so reports say "not available" instead of printing zeros that look measured.

Contract for an implementation (an adapter over `kvledger.host`):
- `evict_device` frees at least what was asked from device (backing victims up first under
  write_back) and returns the device indices the caller must free;
- `after_insert` may back a freshly inserted node up (write_through, selective);
- `loadback` may extend a match with host-resident prefix pages, allocating device pages
  through `alloc_pages` (check-then-commit; None means no room) and returning the new match;
- `stats` reports cumulative backup and loadback traffic in bytes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from kvledger.tree.node import Node
from kvledger.tree.radix import RadixTree
from kvledger.tree.results import EvictResult, MatchResult


@dataclass(frozen=True, slots=True, kw_only=True)
class HostStats:
    backup_bytes: int
    loadback_bytes: int
    host_evicted_pages: int
    loadback_hit_tokens: int  # prompt tokens served from host instead of recomputed


class HostTier(ABC):
    name: str

    @abstractmethod
    def evict_device(self, tree: RadixTree, *, full_pages: int, mamba_slots: int) -> EvictResult:
        """Make room on device; returns device indices to free."""

    @abstractmethod
    def after_insert(self, tree: RadixTree, node: Node) -> None:
        """A node was inserted or extended on device."""

    @abstractmethod
    def loadback(self, tree: RadixTree, match: MatchResult,
                 alloc_pages: Callable[[int], np.ndarray | None]) -> MatchResult:
        """Bring the host-only part of `match` to device, if the policy and room allow."""

    @abstractmethod
    def stats(self) -> HostStats | None:
        """Cumulative host traffic; None when there is no host tier."""


class NoHostTier(HostTier):
    """Hierarchical caching off: the device is the only tier."""

    name = "off"

    def evict_device(self, tree: RadixTree, *, full_pages: int, mamba_slots: int) -> EvictResult:
        return tree.evict(full_tokens=full_pages, mamba_slots=mamba_slots)

    def after_insert(self, tree: RadixTree, node: Node) -> None:
        return None

    def loadback(self, tree: RadixTree, match: MatchResult,
                 alloc_pages: Callable[[int], np.ndarray | None]) -> MatchResult:
        return match

    def stats(self) -> HostStats | None:
        return None
