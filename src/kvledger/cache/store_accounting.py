"""StoreAccounting: the store tier (L3) in accounting mode — objects, bytes and transfer time.

The real store tier (`kvledger.cache.store_tier`) moves bytes; the simulator only needs what
the store holds and what moving it costs. A group is what the real tier writes for one
cached prefix end: its new page objects, the state after its last page and a manifest, with
the byte layout of `kvledger.sglang.l3plan.NodeObjects` (local-dir rounds each file up to 4 KiB).
Page objects are keyed by the prefix chain, so two groups along one prefix share the pages
they have in common, as the real store does (one key, one object).

Capacity is check-then-commit: a put evicts least recently used groups until the group fits
(a group larger than the whole store is refused). A group whose parent group was evicted is
unreachable: a lookup walks manifests back to the root, so it is a miss, never an error.

Time: each transfer costs ``latency_ms`` per round trip plus bytes / bandwidth. A read is two
round trips (the manifests, then one batch of pages and the state); a write is one.

Conservation law (`check_integrity`): used bytes = unique page objects × page object bytes +
Σ groups (state + manifest bytes) ≤ capacity, and every page's reference count equals the
number of live groups holding it.

>>> from kvledger.store.backend import BackendKind
>>> link = StoreLink(backend=BackendKind.REDIS, get_gbps=1.0, put_gbps=2.0, latency_ms=0.5)
>>> s = StoreAccounting(capacity_bytes=10_000, page_bytes=1_000, state_bytes=2_000, link=link)
>>> chain = prefix_chain([7, 8, 9])
>>> s.put(chain, end_pages=2), s.objects, s.used_bytes   # 2 pages + state + 82 B manifest
(True, 4, 4082)
>>> s.match(chain, start_pages=0, max_pages=3)   # the deepest stored end: 2 pages
2
>>> s.record_get(chain, 0, 2)                    # 2 × 0.5 ms + 4,082 B at 1 GB/s
1.004082
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from kvledger.core.units import cdiv
from kvledger.sglang.l3plan import FS_BLOCK_BYTES, NodeObjects
from kvledger.store.backend import BackendKind


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreLink:
    """What one transfer to the store costs."""

    backend: BackendKind
    get_gbps: float  # 1e9 bytes per second, reads
    put_gbps: float  # writes
    latency_ms: float  # per round trip

    @classmethod
    def default(cls, backend: BackendKind) -> StoreLink:
        """Raw-client rates of `python bench/l3.py --groups 2 --repeats 4` on a 2-core
        machine over loopback (GLM-5.3-Flash groups); assumptions elsewhere — pass your own."""
        get, put, latency = _DEFAULTS[backend]
        return cls(backend=backend, get_gbps=get, put_gbps=put, latency_ms=latency)

    def validate(self) -> None:
        if not (self.get_gbps > 0 and self.put_gbps > 0 and self.latency_ms >= 0):
            raise ValueError(f"--l3-backend {self.backend.value}: bandwidths must be > 0 GB/s "
                             f"and latency ≥ 0 ms")


_DEFAULTS = {  # get GB/s, put GB/s, latency ms
    BackendKind.LOCAL_DIR: (1.8, 5.0, 0.05),
    BackendKind.REDIS: (0.3, 1.6, 0.1),
    BackendKind.MOONCAKE: (1.5, 5.1, 0.2),
}


def prefix_chain(page_keys: Sequence[int]) -> list[int]:
    """One id per page naming the whole prefix up to it (page keys alone name content)."""
    out, h = [], 0
    for key in page_keys:
        h = hash((h, int(key)))
        out.append(h)
    return out


@dataclass(slots=True)
class _Group:
    first_pages: int
    pages: tuple[int, ...]  # chain ids of its page objects
    own_bytes: int  # state + manifest


class StoreAccounting:
    def __init__(self, *, capacity_bytes: int, page_bytes: int, state_bytes: int,
                 link: StoreLink) -> None:
        if capacity_bytes < 1:
            raise ValueError(f"--l3-size: expected a positive size, got {capacity_bytes} bytes")
        link.validate()
        self.capacity_bytes, self.link = capacity_bytes, link
        self.page_bytes, self.state_bytes = page_bytes, state_bytes
        self.page_object_bytes = self._file(page_bytes)
        self.groups: OrderedDict[int, _Group] = OrderedDict()  # end chain id → group, LRU first
        self.page_refs: dict[int, int] = {}
        self.used_bytes = 0
        self.put_groups = self.put_bytes = self.refused_groups = self.evicted_groups = 0
        self.get_groups = self.get_bytes = 0
        self.put_ms = self.get_ms_total = 0.0

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

    # ---- lookups -----------------------------------------------------------------------------

    def _reachable(self, chain: Sequence[int], end_pages: int) -> bool:
        while end_pages > 0:
            group = self.groups.get(chain[end_pages - 1])
            if group is None:
                return False
            end_pages = group.first_pages
        return True

    def match(self, chain: Sequence[int], *, start_pages: int, max_pages: int) -> int:
        """The deepest stored prefix end in start_pages < end ≤ max_pages whose manifests
        chain back to the root, or start_pages when there is none."""
        for end in range(min(max_pages, len(chain)), start_pages, -1):
            if chain[end - 1] in self.groups and self._reachable(chain, end):
                return end
        return start_pages

    def _walk(self, chain: Sequence[int], start_pages: int, end_pages: int) -> int:
        """Manifest bytes read to restore pages start..end − 1 (every group ending past
        start); each read refreshes the group's recency."""
        nbytes, end = 0, end_pages
        while end > start_pages:
            self.groups.move_to_end(chain[end - 1])
            group = self.groups[chain[end - 1]]
            nbytes += self._node(end - group.first_pages).manifest_bytes
            end = group.first_pages
        return nbytes

    def read_bytes(self, *, pages: int, manifest_bytes: int) -> int:
        return (pages * self.page_bytes  # page objects
                + self.state_bytes  # the state at the end
                + manifest_bytes)  # manifests walked

    def get_ms(self, *, pages: int, manifest_bytes: int) -> float:
        """Read the manifests, then `pages` page objects and one state: two round trips."""
        nbytes = self.read_bytes(pages=pages, manifest_bytes=manifest_bytes)
        return round(2 * self.link.latency_ms + nbytes / (self.link.get_gbps * 1e6), 6)

    def record_get(self, chain: Sequence[int], start_pages: int, end_pages: int) -> float:
        """Account a restore of pages start..end − 1 and the state at end; its time in ms."""
        manifest = self._walk(chain, start_pages, end_pages)
        pages = end_pages - start_pages
        ms = self.get_ms(pages=pages, manifest_bytes=manifest)
        self.get_groups += 1
        self.get_bytes += self.read_bytes(pages=pages, manifest_bytes=manifest)
        self.get_ms_total += ms
        return ms

    # ---- writes ------------------------------------------------------------------------------

    def put(self, chain: Sequence[int], *, end_pages: int) -> bool:
        """Write the group ending at `end_pages` (its pages past the deepest stored end below
        it, then its state and manifest). False when it can never fit."""
        if end_pages < 1:
            return False
        key = chain[end_pages - 1]
        if key in self.groups:
            self.groups.move_to_end(key)
            return True
        first = self.match(chain, start_pages=0, max_pages=end_pages - 1)
        pages = tuple(chain[first:end_pages])
        own = self._own(self._node(end_pages - first))
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
        self.groups[key] = _Group(first_pages=first, pages=pages, own_bytes=own)
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
