"""AccountingStore: the store tier's groups in accounting mode — objects, bytes, transfer time.

The store tier (`kvledger.cache.l3_tier.L3Tier`) runs the same code in both modes; only
where its groups go differs. In real bytes they go to a server (`kvledger.cache.
backend_groups`); here they are sizes: what the store holds and what moving it costs, with
no bytes, no torch and no server (the simulator's L3). A group is what the tier writes for
one cached prefix end: its pages past the deepest group the tier had already written below
it (``first_pages``), the state after its last page and a manifest, with the byte layout of
`kvledger.sglang.l3plan.NodeObjects` (local-dir rounds each file up to 4 KiB). Page objects are
keyed by the prefix chain, so two groups along one prefix share the pages they have in
common, as the real store does (one key, one object).

Capacity is check-then-commit: a put evicts least recently used groups until the group fits
(a group larger than the whole store is refused). A read answers as `read_prefix` does over
a real backend: the deepest group (at least ``min_end_page``, at most `MAX_TRIES` tried)
whose manifests chain back to the read's start; a group whose parent group was evicted
below it is broken, a miss, never an error.

Time: each transfer costs ``latency_ms`` per round trip plus bytes / bandwidth. A restore is
two round trips (the manifests, then one batch of pages and the state); a lookup that finds
nothing is one; a write is one, queued (not waited for). A restore slower than the tier's
prefetch timeout raises `StoreTimeout`, as a late server does.

Conservation law (`check_integrity`): used bytes = unique page objects × page object bytes +
Σ groups (state + manifest bytes) ≤ capacity, and every page's reference count equals the
number of live groups holding it.

>>> link = StoreLink(backend=BackendKind.REDIS, get_gbps=1.0, put_gbps=2.0, latency_ms=0.5)
>>> s = AccountingStore(capacity_bytes=10_000, page_bytes=1_000, state_bytes=2_000, link=link)
>>> chain = prefix_chain([7, 8, 9])
>>> s.put(chain, end_pages=2), s.objects, s.used_bytes   # 2 pages + state + 82 B manifest
(True, 4, 4082)
>>> got = s.read(chain, start_page=0, min_end_page=1, timeout_s=1.0)
>>> got.end_page, got.wait_ms                    # 2 × 0.5 ms + 4,082 B at 1 GB/s
(2, 1.004082)
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kvledger.core.units import cdiv
from kvledger.sglang.l3plan import FS_BLOCK_BYTES, NodeObjects
from kvledger.store.backend import BackendKind
from kvledger.store.group_store import GroupAck, PrefixRead
from kvledger.store.link import StoreLink
from kvledger.store.queue import StoreTimeout

MAX_TRIES = 3  # groups a read tries, deepest first (`kvledger.store.transfer.MAX_TRIES`)


_BASE = 0x9E3779B97F4A7C15  # odd, so invertible modulo 2^64
_BASE_INV = pow(_BASE, -1, 1 << 64)


def _mix(keys: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser: every input bit reaches every output bit (uint64, wrapping)."""
    z = keys + np.uint64(_BASE)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def prefix_chain(page_keys: Sequence[int] | np.ndarray) -> list[int]:
    """One id per page naming the whole prefix up to it (page keys alone name content).

    Id i is the polynomial Σ_{j ≤ i} mix(key_j) · B^(i − j) modulo 2^64, computed at once as
    B^i · cumsum(mix(key_j) · B^(−j)) (numpy wraps uint64 arithmetic modulo 2^64). Two
    different prefixes share an id with probability about 2^−64 per pair: the keys are a
    workload's, not an adversary's.

    >>> a, b = prefix_chain([7, 8, 9]), prefix_chain([7, 8, 5])
    >>> a[:2] == b[:2], a[2] == b[2], prefix_chain([8])[0] == a[1]
    (True, False, False)
    """
    keys = np.asarray(page_keys, dtype=np.int64).view(np.uint64)
    n = len(keys)
    if not n:
        return []
    up, down = np.full(n, _BASE, dtype=np.uint64), np.full(n, _BASE_INV, dtype=np.uint64)
    up[0] = down[0] = 1
    up, down = np.cumprod(up), np.cumprod(down)  # B^i and B^(−i)
    return (np.cumsum(_mix(keys) * down) * up).tolist()


@dataclass(slots=True)
class _Group:
    first_pages: int
    pages: tuple[int, ...]  # chain ids of its page objects
    own_bytes: int  # state + manifest


class AccountingStore:
    """The `GroupStore` of accounting mode (see `kvledger.cache.l3_tier`)."""

    holds_bytes = False

    def __init__(self, *, capacity_bytes: int, page_bytes: int, state_bytes: int,
                 link: StoreLink) -> None:
        if capacity_bytes < 1:
            raise ValueError(f"--l3-size: expected a positive size, got {capacity_bytes} bytes")
        link.validate()
        self.capacity_bytes, self.link, self.kind = capacity_bytes, link, link.backend
        self.page_bytes, self.state_bytes = page_bytes, state_bytes
        self.page_object_bytes = self._file(page_bytes)
        self.groups: OrderedDict[int, _Group] = OrderedDict()  # end chain id → group, LRU first
        self.page_refs: dict[int, int] = {}
        self.used_bytes = 0
        self.put_groups = self.put_bytes = self.refused_groups = self.evicted_groups = 0
        self.get_groups = self.get_bytes = 0
        self.put_ms = self.get_ms_total = 0.0
        self._acks: list[GroupAck] = []

    @property
    def _rounds(self) -> bool:
        return self.link.backend is BackendKind.LOCAL_DIR

    def _node(self, pages: int) -> NodeObjects:
        return NodeObjects(pages=pages, page_bytes=self.page_bytes, state_bytes=self.state_bytes)

    def _file(self, nbytes: int) -> int:
        """An object's bytes as the backend lays it out (local-dir: whole 4 KiB blocks)."""
        return cdiv(nbytes, FS_BLOCK_BYTES) * FS_BLOCK_BYTES if self._rounds else nbytes

    def _own(self, node: NodeObjects) -> int:
        """State + manifest bytes of a group."""
        return self._file(node.state_bytes) + self._file(node.manifest_bytes)

    @property
    def objects(self) -> int:
        return len(self.page_refs) + 2 * len(self.groups)  # pages; state + manifest per group

    # ---- the tier's calls (`GroupStore`) -------------------------------------------------------

    def prefix_ids(self, tree_keys: np.ndarray) -> list[int]:
        return prefix_chain(tree_keys)  # the tree keys whole pages here: one key, one page

    def write(self, ids: Sequence[int], *, first_page: int, page_ids: np.ndarray,
              state_slot: int) -> None:
        """Store the group ending at page len(ids) now; its acknowledgement comes with the
        next `acks`, as a real write's does (no bytes to copy: `page_ids`, `state_slot`
        name device memory a real store would read)."""
        pages = len(ids) - first_page
        stored = self.put(ids, end_pages=len(ids), first_pages=first_page)
        self._acks.append(GroupAck(group=ids[-1], stored=stored, error=None,
                                   payload_bytes=pages * self.page_bytes + self.state_bytes))

    def acks(self, *, wait_s: float | None = None) -> list[GroupAck]:
        done, self._acks = self._acks, []
        return done

    @property
    def pending_writes(self) -> int:
        return len(self._acks)

    pending_reads = 0  # reads are answered when asked

    def read(self, ids: Sequence[int], *, start_page: int, min_end_page: int,
             timeout_s: float) -> PrefixRead:
        present = tuple(n for n in range(len(ids), start_page, -1) if ids[n - 1] in self.groups)
        broken: list[int] = []
        for end in [n for n in present if n >= min_end_page][:MAX_TRIES]:
            if not self._reachable(ids, end, start_page):
                broken.append(end)
                continue
            pages, manifest = end - start_page, self._manifest_bytes(ids, start_page, end)
            ms = self.get_ms(pages=pages, manifest_bytes=manifest)
            if ms > timeout_s * 1000:
                raise StoreTimeout(f"accounting store: a {ms:.1f} ms read outlives the "
                                   f"{timeout_s:g} s prefetch timeout")
            self._refresh(ids, start_page, end)
            self.get_groups += 1
            self.get_bytes += self.read_bytes(pages=pages, manifest_bytes=manifest)
            self.get_ms_total += ms
            return PrefixRead(end_page=end, pages=None, state=None, present=present,
                              broken=tuple(broken), wait_ms=ms)
        ms = round(self.link.latency_ms, 6)  # one lookup round trip, nothing restorable
        self.get_ms_total += ms
        return PrefixRead.none(present=present, broken=tuple(broken), wait_ms=ms)

    def install(self, got: PrefixRead, token_slots: np.ndarray, state_slot: int) -> None:
        return None  # no bytes in accounting mode

    def close(self) -> None:
        return None

    # ---- lookups -----------------------------------------------------------------------------

    def _reachable(self, chain: Sequence[int], end_pages: int, start_pages: int) -> bool:
        """Whether manifests chain from the group ending at `end_pages` down to one covering
        `start_pages` (pages below it are on device)."""
        while end_pages > start_pages:
            group = self.groups.get(chain[end_pages - 1])
            if group is None:
                return False
            end_pages = group.first_pages
        return True

    def _manifest_bytes(self, chain: Sequence[int], start_pages: int, end_pages: int) -> int:
        """Manifest bytes read to restore pages start..end − 1 (every group ending past start)."""
        nbytes, end = 0, end_pages
        while end > start_pages:
            group = self.groups[chain[end - 1]]
            nbytes += self._node(end - group.first_pages).manifest_bytes
            end = group.first_pages
        return nbytes

    def _refresh(self, chain: Sequence[int], start_pages: int, end_pages: int) -> None:
        """A read refreshes the recency of every group it walked."""
        end = end_pages
        while end > start_pages:
            self.groups.move_to_end(chain[end - 1])
            end = self.groups[chain[end - 1]].first_pages

    def read_bytes(self, *, pages: int, manifest_bytes: int) -> int:
        return (pages * self.page_bytes  # page objects
                + self.state_bytes  # the state at the end
                + manifest_bytes)  # manifests walked

    def get_ms(self, *, pages: int, manifest_bytes: int) -> float:
        """Read the manifests, then `pages` page objects and one state: two round trips."""
        nbytes = self.read_bytes(pages=pages, manifest_bytes=manifest_bytes)
        return round(2 * self.link.latency_ms + nbytes / (self.link.get_gbps * 1e6), 6)

    # ---- writes ------------------------------------------------------------------------------

    def put(self, chain: Sequence[int], *, end_pages: int, first_pages: int = 0) -> bool:
        """Write the group of pages first_pages .. end_pages − 1, then its state and
        manifest. False when it can never fit (nothing is then written)."""
        if not 0 <= first_pages < end_pages <= len(chain):
            raise ValueError(f"put: pages {first_pages}..{end_pages - 1} outside the "
                             f"{len(chain)}-page prefix (or empty)")
        key = chain[end_pages - 1]
        if key in self.groups:  # the same key always carries the same bytes
            self.groups.move_to_end(key)
            return True
        pages = tuple(chain[first_pages:end_pages])
        own = self._own(self._node(end_pages - first_pages))
        new_pages = [p for p in pages if p not in self.page_refs]
        need = own + len(new_pages) * self.page_object_bytes
        if need > self.capacity_bytes:
            self.refused_groups += 1
            return False
        while self.used_bytes + need > self.capacity_bytes:
            self._evict_one()
            new_pages = [p for p in pages if p not in self.page_refs]
            need = own + len(new_pages) * self.page_object_bytes
        for p in pages:
            self.page_refs[p] = self.page_refs.get(p, 0) + 1
        self.groups[key] = _Group(first_pages=first_pages, pages=pages, own_bytes=own)
        self.used_bytes += need
        self.put_groups += 1
        self.put_bytes += need
        self.put_ms += round(self.link.latency_ms + need / (self.link.put_gbps * 1e6), 6)
        return True

    def _evict_one(self) -> None:
        _, group = self.groups.popitem(last=False)
        self.used_bytes -= group.own_bytes
        for p in group.pages:
            self.page_refs[p] -= 1
            if not self.page_refs[p]:
                del self.page_refs[p]
                self.used_bytes -= self.page_object_bytes
        self.evicted_groups += 1

    def check_integrity(self) -> None:
        refs: dict[int, int] = {}
        for g in self.groups.values():
            for p in g.pages:
                refs[p] = refs.get(p, 0) + 1
        if refs != self.page_refs:
            raise RuntimeError("store accounting: page reference counts differ from the groups")
        used = (len(refs) * self.page_object_bytes
                + sum(g.own_bytes for g in self.groups.values()))
        if used != self.used_bytes or used > self.capacity_bytes:
            raise RuntimeError(f"store accounting: {self.used_bytes} bytes used, groups hold "
                               f"{used}, capacity {self.capacity_bytes}")
