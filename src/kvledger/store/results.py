"""What a store tier's group stores answer: a write's acknowledgement and a prefix read.

Both modes answer with these (`kvledger.store.transfer` over a real backend, and
`kvledger.store.accounting` in accounting mode), so the tier above reads one shape. A
group is named by the prefix id of its last page (`group`); a read names pages by their
count from the root (a group "ending at n" holds the state after page n − 1).

>>> nothing = PrefixRead.none(present=(3,), broken=(3,), wait_ms=0.5)
>>> nothing.found, nothing.end_page, nothing.broken
(False, 0, (3,))
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass


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
