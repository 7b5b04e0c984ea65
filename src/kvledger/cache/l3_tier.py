"""L3Tier: the third tier — object groups in a shared store, below device and host.

One implementation of `kvledger.cache.store_tier.StoreTier` for both of the facade's modes;
only its `kvledger.store.group_store.GroupStore` differs: real bytes on a server
(`kvledger.cache.backend_groups`: the engine, `kvledger verify --workload l3-*`) or sizes in
accounting mode (`kvledger.store.accounting`: `kvledger simulate --l3-size`). Tree keys are
tokens in real bytes and whole pages in accounting (``unit_tokens``). The facade calls:

    prefetch(cache, keys)  before matching: when the store may hold a longer prefix than
                           device + host and the device has room for one page more, read
                           the longest committed one (the request waits, up to the
                           `PrefetchTimeout`) and hand it to
                           `cache.adopt_restored`, which writes it into fresh device pages
                           and a state slot and inserts it — from there it is an ordinary
                           device hit, and the host tier's insert hook backs it up to host
                           under write-through (store → device → host)
    on_insert(node)        write-through: queue the node's group (copied out now)
    on_hit(node)           write_through_selective: queue it on its second hit
    after_evict()          write_back: queue the groups of nodes eviction just took, from
                           their freed slots (not yet reused: the facade allocates only
                           after it returns)

The source of every write is the device copy (KV and state are on device whenever a node
is inserted or hit). Writes commit when acknowledged by `poll`; a group chains on its
deepest ancestor group that is committed or queued ahead of it (acknowledged in order), so
it carries only its own pages. Any store failure — unreachable, timed out, evicted,
partial, corrupt — is a miss and the request recomputes; nothing the store returns is used
unless its manifest, sizes and digests all check. A read also tells the tier what the
store no longer has: a group it had committed whose manifest is gone (the server
restarted empty, or evicted it) is forgotten and counted (`lost_groups`), and so is a
broken one (`broken_groups`), so a later backup writes it again.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from kvledger.cache.store_tier import StoreStats
from kvledger.host.policy import POLICIES, BackupPolicy
from kvledger.store.backend import StoreUnavailable
from kvledger.store.group_store import GroupAck, GroupStore, PrefixRead
from kvledger.store.queue import StoreTimeout
from kvledger.tree import Node, RadixTree
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
class _Dirty:
    """A node's group as it sat on device when inserted (write_back flushes it)."""

    tokens: np.ndarray
    indices: np.ndarray
    state_slot: int


def path_tokens(node: Node) -> np.ndarray:
    """The tree keys from the root to the end of `node`."""
    keys = []
    while node.parent is not None:
        keys.append(node.key)
        node = node.parent
    return np.frombuffer(b"".join(reversed(keys)), dtype=TOKEN_DTYPE)


@dataclass
class L3Tier:
    groups: GroupStore
    page_tokens: int
    unit_tokens: int = 1  # tokens per tree key: 1 in real bytes, the page in accounting
    policy: BackupPolicy = BackupPolicy.WRITE_THROUGH
    timeout: PrefetchTimeout = field(default_factory=PrefetchTimeout)
    stats: StoreStats = field(default_factory=StoreStats)

    def __post_init__(self) -> None:
        if not isinstance(self.policy, BackupPolicy):
            raise ValueError(f"policy: expected a BackupPolicy, got {self.policy!r}")
        if self.unit_tokens < 1 or self.page_tokens % self.unit_tokens:
            raise ValueError(f"L3Tier: {self.unit_tokens} tokens per key do not divide the "
                             f"{self.page_tokens}-token page")
        self.page = self.page_tokens // self.unit_tokens  # tree units per page
        self.rule = POLICIES[self.policy]
        self.committed: set[Hashable] = set()  # groups acknowledged (or read back intact)
        self.writing: set[Hashable] = set()  # groups queued, not yet acknowledged
        self.hits: dict[Node, int] = {}
        self.dirty: dict[Node, _Dirty] = {}

    def fits(self, *, page_tokens: int, unit_tokens: int, writes_rows: bool,
             has_states: bool) -> str | None:
        if not has_states:
            return "the store tier keeps a node's state with its pages; this cache has none"
        if (page_tokens, unit_tokens) != (self.page_tokens, self.unit_tokens):
            return (f"the store tier's page is {self.page_tokens} tokens, {self.unit_tokens} "
                    f"per key; the cache's {page_tokens}, {unit_tokens} per key")
        if writes_rows != self.groups.holds_bytes:
            mode = "real bytes" if self.groups.holds_bytes else "accounting mode"
            return f"a store tier in {mode} needs the facade in {mode}"
        return None

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

    def after_evict(self, tree: RadixTree, freed_indices: np.ndarray,
                    freed_slots: np.ndarray) -> None:
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
        ids = self.groups.prefix_ids(tokens)
        end = len(ids)
        group = ids[end - 1]
        if group in self.committed or group in self.writing:
            return
        base = next((n for n in range(end - 1, 0, -1)
                     if ids[n - 1] in self.committed or ids[n - 1] in self.writing), 0)
        page_ids = indices[base * self.page::self.page] // self.page
        # Registered only once queued: a write that raises (a failed copy, an interrupt)
        # leaves no group "queued" that no write will ever acknowledge.
        self.groups.write(ids, first_page=base, page_ids=page_ids, state_slot=state_slot)
        self.writing.add(group)
        self.stats.groups_queued += 1

    def poll(self) -> int:
        """Acknowledge finished writes; returns how many."""
        return self._settle(self.groups.acks())

    def _settle(self, acks: list[GroupAck]) -> int:
        for ack in acks:
            self.writing.discard(ack.group)
            if ack.error is not None:
                self.stats.write_errors += 1
            elif ack.stored:
                self.committed.add(ack.group)
                self.stats.groups_committed += 1
                self.stats.written_bytes += ack.payload_bytes
            else:
                self.stats.groups_refused += 1
        return len(acks)

    def flush(self, timeout_s: float = 60.0) -> None:
        """Wait for every queued write and acknowledge it (tests, shutdown)."""
        self._settle(self.groups.acks(wait_s=timeout_s))

    # ---- reads -----------------------------------------------------------------------------

    def prefetch(self, cache: HybridCache, keys: np.ndarray) -> int:
        """Restore the longest committed prefix of `keys` (the whole pages admission
        matches) deeper than device + host hold; returns the tree units restored (0:
        nothing, or recompute). A read starts only when the device could take at least
        one page more than device + host hold (check, then read, then commit)."""
        self.poll()
        keys = np.asarray(keys)
        match = cache.tree.match_prefix(keys)
        page = self.page
        start = match.device_hit_length // page
        have = start + match.host_hit_length // page
        if len(keys) // page <= have:
            return 0
        if not cache.can_adopt(have + 1 - start):
            self.stats.no_room += 1
            return 0
        ids = self.groups.prefix_ids(keys)
        self.stats.prefetches += 1
        timeout_s = self.timeout.for_tokens(len(keys) * self.unit_tokens)
        try:
            got = self.groups.read(ids, start_page=start, min_end_page=have + 1,
                                   timeout_s=timeout_s)
        except StoreTimeout:
            self.stats.timeouts += 1
            self.stats.read_wait_ms += timeout_s * 1000
            return 0
        except StoreUnavailable:
            self.stats.unavailable += 1
            return 0
        self.stats.read_wait_ms += got.wait_ms
        self._forget(ids, start, got)
        if not got.found:
            self.stats.misses += 1
            return 0
        num_pages = got.end_page - start
        restored = cache.adopt_restored(match, keys[: got.end_page * page], num_pages,
                                        lambda slots, slot: self.groups.install(got, slots, slot))
        if not restored:
            self.stats.no_room += 1
            return 0
        group = ids[got.end_page - 1]
        if group not in self.writing:  # a write of it in flight commits it when acknowledged
            self.committed.add(group)
        st = self.stats
        st.restored_groups += 1
        st.restored_pages += num_pages
        st.restored_bytes += num_pages * self.groups.page_bytes + self.groups.state_bytes
        return num_pages * page

    def _forget(self, ids: Sequence[Hashable], start_page: int, got: PrefixRead) -> None:
        """Forget committed groups the read found gone or broken, so backups rewrite them."""
        present = set(got.present)
        for n in range(start_page + 1, len(ids) + 1):
            if n not in present and ids[n - 1] in self.committed:
                self.committed.discard(ids[n - 1])
                self.stats.lost_groups += 1
        for n in got.broken:
            self.committed.discard(ids[n - 1])
        self.stats.broken_groups += len(got.broken)

    # ---- integrity -------------------------------------------------------------------------

    def check_integrity(self) -> None:
        """Every queued write is pending exactly once; committed and queued never overlap."""
        if len(self.writing) != self.groups.pending_writes:
            raise RuntimeError(f"StoreTier: {len(self.writing)} groups queued but "
                               f"{self.groups.pending_writes} writes pending")
        if self.writing & self.committed:
            raise RuntimeError("StoreTier: a group is both queued and committed")
        if self.groups.pending_reads:
            raise RuntimeError(f"StoreTier: {self.groups.pending_reads} reads left unsettled")

    def close(self) -> None:
        self.flush()
        self.groups.close()
