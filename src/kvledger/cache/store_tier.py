"""The store tier as the facade sees it: one protocol (`StoreTier`) and its null object.

`HybridCache` never asks whether a store tier exists: every admission's prefetch, every
insert, hit and device eviction goes through `StoreTier`. Two implementations: `NoStoreTier`
(no store below host: nothing is written, nothing restored) and `kvledger.cache.l3_tier.
L3Tier` (object groups in a shared store, in real bytes on a server or in accounting mode).

Units are the tree's: tokens when the tree keys tokens (real bytes), pages when it keys
whole pages (accounting).

>>> tier = NoStoreTier()
>>> tier.fits(page_tokens=64, unit_tokens=64, writes_rows=False, has_states=False) is None
True
>>> tier.prefetch(None, None), tier.stats.restored_pages
(0, 0)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from kvledger.tree import Node, RadixTree

if TYPE_CHECKING:
    from kvledger.cache.hybrid import HybridCache


@dataclass(slots=True)
class StoreStats:
    groups_queued: int = 0
    groups_committed: int = 0
    groups_refused: int = 0  # a put returned False (store full, object too big)
    write_errors: int = 0  # the store was unreachable
    written_bytes: int = 0
    prefetches: int = 0  # reads tried (the store might hold more than device + host)
    restored_groups: int = 0
    restored_pages: int = 0
    restored_bytes: int = 0
    misses: int = 0  # reads that restored nothing
    broken_groups: int = 0  # partial or corrupt groups a read found (skipped, recomputed)
    lost_groups: int = 0  # committed groups the store no longer had (forgotten, rewritable)
    timeouts: int = 0
    unavailable: int = 0
    no_room: int = 0  # a hit the device could not take now
    read_wait_ms: float = 0.0  # time admissions waited for reads (measured, or modelled)


class StoreTier(Protocol):
    """What the facade calls on a store tier (and what its owner reads: `stats`)."""

    stats: StoreStats

    def fits(self, *, page_tokens: int, unit_tokens: int, writes_rows: bool,
             has_states: bool) -> str | None:
        """Why this tier cannot serve a facade of this shape (None: it can)."""

    def prefetch(self, cache: HybridCache, keys: np.ndarray) -> int:
        """Before admission matches `keys` (tree keys of whole pages): restore from the
        store a prefix deeper than device + host hold, through `cache.adopt_restored`, so
        it is an ordinary device hit. Returns the tree units restored (0: nothing)."""

    def on_insert(self, node: Node) -> None:
        """The tree just cached the prefix ending at `node` (the facade's books agree)."""

    def on_hit(self, node: Node) -> None:
        """An admitted request reuses the cached prefix ending at `node`."""

    def before_evict(self) -> None:
        """The facade is about to evict from device (write_back's bookkeeping)."""

    def after_evict(self, tree: RadixTree, freed_indices: np.ndarray,
                    freed_slots: np.ndarray) -> None:
        """A device eviction freed these indices and slots (not yet reused)."""

    def flush(self, timeout_s: float = 60.0) -> None:
        """Wait for every queued write and acknowledge it (tests, shutdown)."""

    def close(self) -> None:
        """Flush, then release the store's client and workers."""

    def check_integrity(self) -> None:
        """The tier's own law: every queued write pending exactly once, none both queued
        and committed, no read left unsettled. Raises when broken."""


class NoStoreTier:
    """No store below host (the null `StoreTier`)."""

    def __init__(self) -> None:
        self.stats = StoreStats()

    def fits(self, *, page_tokens: int, unit_tokens: int, writes_rows: bool,
             has_states: bool) -> str | None:
        return None

    def prefetch(self, cache: HybridCache, keys: np.ndarray) -> int:
        return 0

    def on_insert(self, node: Node) -> None:
        return None

    def on_hit(self, node: Node) -> None:
        return None

    def before_evict(self) -> None:
        return None

    def after_evict(self, tree: RadixTree, freed_indices: np.ndarray,
                    freed_slots: np.ndarray) -> None:
        return None

    def flush(self, timeout_s: float = 60.0) -> None:
        return None

    def close(self) -> None:
        return None

    def check_integrity(self) -> None:
        return None
