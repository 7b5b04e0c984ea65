"""GroupStore: where a store tier's object groups live, and what it answers.

The store tier (`kvledger.cache.l3_tier.L3Tier`) runs one code in both of the facade's
modes; only its `GroupStore` differs: real bytes on a server (`kvledger.cache.
backend_groups`, over `kvledger.store.transfer`) or sizes in accounting mode
(`kvledger.store.accounting`). Both answer with a `GroupAck` per finished write and a
`PrefixRead` per read. A group is named by the prefix id of its last page (`group`); a read
names pages by their count from the root (a group "ending at n" holds the state after page
n − 1).

>>> nothing = PrefixRead.none(present=(3,), broken=(3,), wait_ms=0.5)
>>> nothing.found, nothing.end_page, nothing.broken
(False, 0, (3,))
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from kvledger.store.backend import BackendKind


@dataclass(frozen=True, slots=True)
class GroupAck:
    """A queued group write, finished: stored (committed), refused, or failed."""

    group: Hashable  # the prefix id of the group's last page
    stored: bool  # the manifest is in the store (False: refused, or `error`)
    error: BaseException | None  # the store could not be reached (StoreUnavailable)
    payload_bytes: int  # page and state bytes the write carried (manifest not counted)


@dataclass(frozen=True, slots=True)
class PrefixRead:
    """The longest committed, intact prefix a read found, and what it saw on the way.

    ``present``: page counts n (deepest first) past the read's start whose group manifest
    the store holds; a group the tier believed committed and that is not among them was
    lost (the server restarted empty, or evicted it). ``broken``: ends whose group was
    found partial or corrupt (a manifest, page or state absent, of the wrong size, or
    failing its digest), deepest first. ``wait_ms``: how long the reader waited (measured
    in real bytes, modelled in accounting mode).
    """

    end_page: int  # 0: nothing restorable; else pages 0 .. end_page − 1 and the state after
    pages: Sequence[bytes] | None  # pages start .. end_page − 1 (None in accounting mode)
    state: bytes | None
    present: tuple[int, ...]
    broken: tuple[int, ...]
    wait_ms: float = 0.0

    @property
    def found(self) -> bool:
        return self.end_page > 0

    @classmethod
    def none(cls, *, present: tuple[int, ...], broken: tuple[int, ...],
             wait_ms: float = 0.0) -> PrefixRead:
        return cls(end_page=0, pages=None, state=None, present=present, broken=broken,
                   wait_ms=wait_ms)


class GroupStore(Protocol):
    """Where a store tier's groups live (see the module docstring)."""

    kind: BackendKind
    holds_bytes: bool  # real bytes (needs the facade in real bytes) or accounting
    page_bytes: int  # one page object's payload
    state_bytes: int  # one state object's payload

    def prefix_ids(self, tree_keys: np.ndarray) -> Sequence[Hashable]:
        """One id per whole page of `tree_keys`, naming the prefix that ends there."""

    def write(self, ids: Sequence[Hashable], *, first_page: int, page_ids: np.ndarray,
              state_slot: int) -> None:
        """Queue the group of pages first_page .. len(ids) − 1 (device pages `page_ids`)
        and the state in `state_slot` after them, copied out before this returns; it is
        acknowledged by a later `acks`. Raising, it queued nothing."""

    def acks(self, *, wait_s: float | None = None) -> list[GroupAck]:
        """Writes finished since the last call (`wait_s`: wait up to that for all)."""

    def read(self, ids: Sequence[Hashable], *, start_page: int, min_end_page: int,
             timeout_s: float) -> PrefixRead:
        """The longest committed, intact prefix past `start_page` of at least
        `min_end_page` pages; raises `StoreTimeout` past `timeout_s`, `StoreUnavailable`."""

    def install(self, got: PrefixRead, token_slots: np.ndarray, state_slot: int) -> None:
        """Write a read's pages into the device at `token_slots` and its state into
        `state_slot`."""

    @property
    def pending_writes(self) -> int: ...
    @property
    def pending_reads(self) -> int: ...
    def close(self) -> None: ...
