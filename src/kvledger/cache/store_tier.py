"""StoreTier: the third tier — object groups in a shared store, below device and host.

The facade (`HybridCache`) calls four hooks, and nothing else knows the store exists:

    prefetch(cache, prompt)  before matching: when the store holds a longer committed
                             prefix than device + host, read it (the request waits, up to
                             the `PrefetchTimeout`), write it into fresh device pages and a
                             state slot and insert it into the tree — from there it is an
                             ordinary device hit, and the host tier's insert hook backs it
                             up to host under write-through (store → device → host)
    on_insert(node)          write-through: queue the node's group (copied out now)
    on_hit(node)             write_through_selective: queue it on its second hit
    after_evict()            write_back: queue the groups of nodes eviction just took,
                             from their freed slots (not yet reused: the facade allocates
                             only after it returns)

The source of every write is the device copy (KV and state are on device whenever a node
is inserted or hit); the host tier, when on, is filled from device as before. Writes run on
a worker thread (`StoreQueue`) and commit when acknowledged by `poll`; a group chains on
its deepest ancestor group that is committed or queued ahead of it (one worker, in order),
so it carries only its own pages. Any store failure — unreachable, timed out, evicted,
partial, corrupt — is a miss and the request recomputes; nothing the store returns is used
unless its manifest, sizes and digests all check.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from kvledger.cache.store_codec import PageCodec
from kvledger.host.policy import POLICIES, BackupPolicy
from kvledger.store.backend import StoreBackend, StoreUnavailable
from kvledger.store.group import group_write
from kvledger.store.keys import Namespace, ObjectKind, object_key, page_keys
from kvledger.store.queue import StoreQueue, StoreTimeout
from kvledger.store.transfer import read_prefix, write_group
from kvledger.tree import Node
from kvledger.tree.node import TOKEN_DTYPE

if TYPE_CHECKING:
    from kvledger.cache.hybrid import HybridCache


@dataclass(frozen=True, slots=True, kw_only=True)
class PrefetchTimeout:
    """How long a request waits for a store read before recomputing: SGLang's linear
    ``PrefetchTimeoutConfig`` (``mem_cache/hicache_storage.py``: 2 s + 0.1 s per 1,024
    tokens, at most 30 s).

    >>> PrefetchTimeout().for_tokens(4096)
    2.4
    """

    base_s: float = 2.0
    per_ki_token_s: float = 0.1
    max_s: float = 30.0

    def for_tokens(self, num_tokens: int) -> float:
        return min(self.max_s, self.base_s + self.per_ki_token_s * num_tokens / 1024)


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
    misses: int = 0  # nothing longer committed
    broken_groups: int = 0  # partial or corrupt groups skipped on the way
    timeouts: int = 0
    unavailable: int = 0
    no_room: int = 0  # a hit the device could not take now


@dataclass(slots=True)
class _Dirty:
    """A node's group as it sat on device when inserted (write_back flushes it)."""

    tokens: np.ndarray
    indices: np.ndarray
    state_slot: int


def path_tokens(node: Node) -> np.ndarray:
    keys = []
    while node.parent is not None:
        keys.append(node.key)
        node = node.parent
    return np.frombuffer(b"".join(reversed(keys)), dtype=TOKEN_DTYPE)


@dataclass
class StoreTier:
    backend: StoreBackend
    namespace: Namespace
    codec: PageCodec
    policy: BackupPolicy = BackupPolicy.WRITE_THROUGH
    timeout: PrefetchTimeout = field(default_factory=PrefetchTimeout)
    stats: StoreStats = field(default_factory=StoreStats)

    def __post_init__(self) -> None:
        if not isinstance(self.policy, BackupPolicy):
            raise ValueError(f"policy: expected a BackupPolicy, got {self.policy!r}")
        self.rule = POLICIES[self.policy]
        self.writes, self.reads = StoreQueue(), StoreQueue()
        self.committed: set[str] = set()  # manifest keys acknowledged (or read back intact)
        self.writing: set[str] = set()  # manifest keys queued, not yet acknowledged
        self.hits: dict[Node, int] = {}
        self.dirty: dict[Node, _Dirty] = {}

    @property
    def page(self) -> int:
        return self.codec.page_tokens

    def _mkey(self, page_key: str) -> str:
        return object_key(self.namespace, page_key, ObjectKind.MANIFEST)

    # ---- writes ----------------------------------------------------------------------------

    def on_insert(self, node: Node) -> None:
        if node.parent is None:
            return
        if self.rule.backup_on_evict:
            slot = node.mamba.value
            if slot is not None and node.full.value is not None:
                path = self._tree_path(node)
                if path is not None:
                    self.dirty[node] = _Dirty(path_tokens(node), path, int(slot))
            return
        self.on_hit(node)

    def on_hit(self, node: Node) -> None:
        if node.parent is None or self.rule.backup_at_hits is None:
            return
        self.hits[node] = self.hits.get(node, 0) + 1
        if self.rule.backs_up_at(hits=self.hits[node]):
            path = self._tree_path(node)
            if path is not None and node.mamba.value is not None:
                self._queue(path_tokens(node), path, int(node.mamba.value))
        if len(self.hits) > 4096:
            self.hits = {n: c for n, c in self.hits.items() if n.alive}

    def _gone(self, node: Node, d: _Dirty) -> bool:
        return not node.alive or node.full.value is None or node.mamba.value != d.state_slot

    def before_evict(self) -> None:
        """write_back: forget nodes that left the device some other way since the last
        eviction here (a host loadback making room): their slots may hold other bytes now."""
        for node in [n for n, d in self.dirty.items() if self._gone(n, d)]:
            del self.dirty[node]

    def after_evict(self, tree, freed_indices: np.ndarray, freed_slots: np.ndarray) -> None:
        """write_back: queue the recorded nodes this eviction took. Each page must be one
        this eviction freed or one the tree still holds at the same place of the path, and
        the state slot likewise — else the node is dropped, never written from reused
        slots."""
        gone = [n for n, d in self.dirty.items() if self._gone(n, d)]
        freed, slots = set(freed_indices[::self.page].tolist()), set(freed_slots.tolist())
        for node in gone:
            d = self.dirty.pop(node)
            held = tree.match_prefix(d.tokens).device_indices
            n = min(len(held), len(d.indices))
            k = int(np.argmin(np.r_[held[:n] == d.indices[:n], False]))
            pages_ok = all(i in freed for i in d.indices[k // self.page * self.page::self.page]
                           .tolist())
            state_ok = d.state_slot in slots or (node.alive and node.mamba.value == d.state_slot)
            if pages_ok and state_ok:
                self._queue(d.tokens, d.indices, d.state_slot)

    def _tree_path(self, node: Node) -> np.ndarray | None:
        tree_path = []
        while node.parent is not None:
            if node.full.value is None:
                return None  # part of the path is not on device: nothing to copy from
            tree_path.append(node.full.value)
            node = node.parent
        return np.concatenate(tree_path[::-1])

    def _queue(self, tokens: np.ndarray, indices: np.ndarray, state_slot: int) -> None:
        keys = page_keys(self.namespace, tokens, page_tokens=self.page)
        end = len(keys)
        mkey = self._mkey(keys[end - 1])
        if mkey in self.committed or mkey in self.writing:
            return
        base = next((n for n in range(end - 1, 0, -1)
                     if self._mkey(keys[n - 1]) in self.committed
                     or self._mkey(keys[n - 1]) in self.writing), 0)
        pages = self.codec.read_pages(indices[base * self.page::self.page] // self.page)
        group = group_write(self.namespace, keys, first_page=base, pages=pages,
                            state=self.codec.read_state(state_slot))
        self.writing.add(mkey)
        self.stats.groups_queued += 1
        self.writes.submit(lambda: write_group(self.backend, group),
                           tag=(mkey, group.payload_bytes))

    def poll(self) -> int:
        """Acknowledge finished writes; returns how many."""
        return self._settle(self.writes.poll())

    def _settle(self, acks) -> int:
        for ack in acks:
            mkey, size = ack.tag
            self.writing.discard(mkey)
            if ack.error is not None:
                self.stats.write_errors += 1
            elif ack.result:
                self.committed.add(mkey)
                self.stats.groups_committed += 1
                self.stats.written_bytes += size
            else:
                self.stats.groups_refused += 1
        return len(acks)

    def flush(self, timeout_s: float = 60.0) -> None:
        """Wait for every queued write and acknowledge it (tests, shutdown)."""
        self._settle(self.writes.drain(timeout_s=timeout_s))

    # ---- reads -----------------------------------------------------------------------------

    def prefetch(self, cache: HybridCache, tokens: np.ndarray) -> int:
        """Restore the longest committed prefix of ``tokens`` (the whole pages admission
        matches) deeper than device + host hold; returns the tokens restored (0: nothing, or
        recompute)."""
        self.poll()
        tokens = np.asarray(tokens)
        keys = page_keys(self.namespace, tokens, page_tokens=self.page)
        tree = cache.tree
        match = tree.match_prefix(tokens)
        start = match.device_hit_length // self.page
        have = start + match.host_hit_length // self.page
        if len(keys) <= have:
            return 0
        self.stats.prefetches += 1
        ticket = self.reads.submit(lambda: read_prefix(
            self.backend, self.namespace, keys, start_page=start, min_end_page=have + 1))
        try:
            got = self.reads.wait(ticket, timeout_s=self.timeout.for_tokens(len(tokens)))
        except StoreTimeout:
            self.stats.timeouts += 1
            return 0
        except StoreUnavailable:
            self.stats.unavailable += 1
            return 0
        if got is None:
            self.stats.misses += 1
            return 0
        self.stats.broken_groups += got.misses
        return self._adopt(cache, match, tokens, keys, got)

    def _adopt(self, cache: HybridCache, match, tokens: np.ndarray, keys: list[str], got) -> int:
        tree, page = cache.tree, self.page
        start = match.device_hit_length // page
        num_pages = got.end_page - start
        guard = None if match.last_device_node.parent is None else tree.lock(match.last_device_node)
        try:
            if (cache.available_pages() - cache.reserved_pages < num_pages
                    or cache.available_slots() < 1):
                self.stats.no_room += 1
                return 0
            allocator = cache.rows.allocator
            short = num_pages - allocator.num_free_pages
            if short > 0:
                cache._evict(full_units=short * cache.units_per_page)
            slots = cache._alloc_slots(1)
            locs = allocator.alloc(num_pages * page)
            if locs is None or slots is None:
                raise RuntimeError("store prefetch: no room after eviction although it fit")
            slot = int(slots[0])
            self.codec.write_pages(locs[::page] // page, got.pages)
            self.codec.write_state(slot, got.state)
            full = np.concatenate([np.asarray(match.device_indices, dtype=np.int64), locs])
            result = tree.insert(tokens[: got.end_page * page], full, slot)
            cache.tier.on_insert(result)
            if len(result.duplicate_indices):
                cache.rows.free_values(result.duplicate_indices)
            if result.mamba_existed:
                cache.states.free([slot])
        finally:
            if guard is not None:
                tree.unlock(guard)
        self.committed.add(self._mkey(keys[got.end_page - 1]))
        self.stats.restored_groups += 1
        self.stats.restored_pages += num_pages
        self.stats.restored_bytes += num_pages * self.codec.page_bytes + self.codec.state_bytes
        return num_pages * page

    # ---- integrity -------------------------------------------------------------------------

    def check_integrity(self) -> None:
        """Every queued write is pending exactly once; committed and queued never overlap."""
        if len(self.writing) != self.writes.pending:
            raise RuntimeError(f"StoreTier: {len(self.writing)} groups queued but "
                               f"{self.writes.pending} writes pending")
        if self.writing & self.committed:
            raise RuntimeError("StoreTier: a group is both queued and committed")
        if self.reads.pending:
            raise RuntimeError(f"StoreTier: {self.reads.pending} reads left unsettled")

    def close(self) -> None:
        self.flush()
        self.writes.close()
        self.reads.close()
