"""HiCacheController: the host tier's policy and bookkeeping between the tree and the pools.

Contract for the facade that drives it (`kvledger.cache`):

* which states get host room with their KV is `state_backup`'s call
  (`kvledger.host.state_backup`; SGLang's `all` by default);
* after every `tree.insert`, call `on_insert(result)`; when a request reuses a cached
  prefix, `on_hit(node)`. Both count a hit on every node of the path and back up each node
  the write policy says is due (`kvledger.host.policy`);
* route every device eviction through `evict_device`: under write_back it backs victims up
  first, and it returns the freed indices to the device allocators itself;
* before using a match whose `host_hit_length` > 0 or whose state is on host only, call
  `loadback(match, request_slot=…)` right after `match_prefix`; use the returned prefix;
* in queued mode call `poll()` once per scheduler step (acknowledgements commit transfers
  and release their locks); synchronous mode acknowledges inside each call.

`traffic` counts what moved and what was evicted (`kvledger.host.traffic`). With pools on
"meta" (`build_host_group(device="meta")`, no memory) and `IndexOnlyMover` the same
controller runs in accounting mode: every index, lock and policy decision is real and no
byte moves (`kvledger.host.movers`).

Locks: a transfer holds device locks on what it reads or must keep (backup: the node;
loadback: the device prefix) and a host lock on the host copies it reads or hangs from,
until it is acknowledged. The controller never holds a lock between calls otherwise.

The controller keeps policy and routing: hit counts, what is due for backup, where eviction
goes and how room is made. The transfers themselves — queue, mover, locks and allocations in
flight, verification — live in one `Transfers` object (`kvledger.host.transfers`) that
`backup`, `loadback` and `write_back` act on; none of them imports the controller.

Verification is on by default (`verify=True`): every loadback's device bytes are checked
against digests taken at backup, keyed by the prefix each page holds, before it is
acknowledged (`kvledger.host.digests`); a mismatch fails the loadback and the request
recomputes. The pages and state slots beside each run a loadback writes must come out of
the copy unchanged (`kvledger.host.neighbours`: a stray write there is put back and fails
the loadback; one farther away is the documented limit). `verify=False` is for benchmarks
of the raw copies; accounting mode (`IndexOnlyMover`) moves no bytes and verifies nothing.

A host group without an INDEXER pool for a device that has index keys is refused: a
loadback would leave stale index keys on device, the defect of sglang-0.5.21's hybrid
HostPoolGroup. `reproduce_missing_indexer_defect=True` builds it anyway, to reproduce that
defect (its verification then covers KV and states only, as the defect's host did).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from kvledger.host.backup import backup
from kvledger.host.device import DeviceSide
from kvledger.host.group import HostPoolGroup
from kvledger.host.loadback import loadback
from kvledger.host.movers import Mover
from kvledger.host.policy import POLICIES, BackupPolicy
from kvledger.host.results import BackupOutcome, LoadbackResult
from kvledger.host.state_backup import STATE_BACKUPS, HostStateBackup
from kvledger.host.tiers import check_tiers
from kvledger.host.traffic import Traffic
from kvledger.host.transfer import FaultHook, TransferQueue
from kvledger.host.transfers import InFlight, Transfers
from kvledger.host.write_back import evict_writing_back
from kvledger.tree import EvictResult, InsertResult, LockReceipt, MatchResult, Node, RadixTree, Tier
from kvledger.tree.walk import path_spans

__all__ = ["HIT_TABLE_PRUNE", "HiCacheController", "InFlight"]

HIT_TABLE_PRUNE = 4096  # drop hit counts of removed nodes once the table passes this size


class HiCacheController:
    def __init__(self, *, tree: RadixTree, device: DeviceSide, host: HostPoolGroup,
                 policy: BackupPolicy = BackupPolicy.WRITE_THROUGH, synchronous: bool = True,
                 fault: FaultHook | None = None, mover: Mover | None = None,
                 verify: bool = True, reproduce_missing_indexer_defect: bool = False,
                 state_backup: HostStateBackup = HostStateBackup.ALL) -> None:
        if tree.page_size != device.bytes.page_tokens or tree.page_size != host.kv.page_tokens:
            raise ValueError(f"page sizes differ: tree {tree.page_size}, device "
                             f"{device.bytes.page_tokens}, host {host.kv.page_tokens}")
        if not isinstance(policy, BackupPolicy):
            raise ValueError(f"policy: expected a BackupPolicy "
                             f"({', '.join(p.value for p in BackupPolicy)}), got {policy!r}")
        if not isinstance(state_backup, HostStateBackup):
            raise ValueError(f"state_backup: expected a HostStateBackup "
                             f"({', '.join(p.value for p in HostStateBackup)}), "
                             f"got {state_backup!r}")
        host.check_device(device.bytes)
        if device.bytes.index_pages and host.indexer is None and not reproduce_missing_indexer_defect:
            raise ValueError(
                "host group has no INDEXER pool for a device with index keys: every loadback "
                "would leave stale index keys on device (sglang-0.5.21's missing-indexer "
                "defect); pass reproduce_missing_indexer_defect=True to reproduce it")
        self.tree = tree
        self.device = device
        self.host = host
        self.policy = POLICIES[policy]
        self.state_backup = STATE_BACKUPS[state_backup]
        self.transfers = Transfers(tree=tree, device=device, host=host, mover=mover,
                                   synchronous=synchronous, fault=fault, verify=verify)
        self.hits: dict[Node, int] = {}
        # Prune again only once the table doubled: with more live nodes than HIT_TABLE_PRUNE a
        # fixed limit would rebuild the table on every hit.
        self.hits_limit = HIT_TABLE_PRUNE

    # ---- policy hooks ----------------------------------------------------------------------

    def on_insert(self, result: InsertResult) -> BackupOutcome:
        return self.on_hit(result.node)

    def on_hit(self, node: Node) -> BackupOutcome:
        """Count a hit on `node` and every ancestor, and back up each that is due, root first.

        Returns `node`'s own outcome (NOT_DUE when the policy does not back it up yet). A
        node created by a split inherits the count of the node it was cut from (its busiest
        child), as SGLang's `_split_node` copies `hit_count`.
        """
        if node.parent is None:
            return BackupOutcome.NOT_DUE
        spans = path_spans(node)
        for n, _, _ in reversed(spans):  # bottom-up: a split parent's children are counted
            if n not in self.hits:
                self.hits[n] = max((self.hits.get(c, 0) for c in n.children.values()), default=0)
        for n, _, _ in spans:
            self.hits[n] += 1
        if len(self.hits) > self.hits_limit:
            self.hits = {n: count for n, count in self.hits.items() if n.alive}
            self.hits_limit = max(HIT_TABLE_PRUNE, 2 * len(self.hits))
        outcome = BackupOutcome.NOT_DUE
        for n, _, _ in spans:
            if self.policy.backs_up_at(hits=self.hits[n]):
                outcome = self.backup(n)
        return outcome if self.policy.backs_up_at(hits=self.hits[node]) else BackupOutcome.NOT_DUE

    def backup(self, node: Node) -> BackupOutcome:
        """Back up `node` now, whatever the policy (ancestors first)."""
        return backup(self.transfers, node, self.make_host_room, self.state_backup)

    # ---- transfers -------------------------------------------------------------------------

    @property
    def queue(self) -> TransferQueue:
        return self.transfers.queue

    @property
    def mover(self) -> Mover:
        return self.transfers.mover

    @property
    def inflight(self) -> InFlight:
        return self.transfers.inflight

    @property
    def traffic(self) -> Traffic:
        return self.transfers.traffic

    @property
    def verifying(self) -> bool:
        """Whether loadbacks are verified on device bytes (`verify` and a byte mover)."""
        return self.transfers.verifying

    def loadback(self, match: MatchResult, *, request_slot: int | None = None) -> LoadbackResult:
        return loadback(self.transfers, match, request_slot,
                        alloc_tokens=self.alloc_device_tokens,
                        alloc_state=self.alloc_device_state)

    def poll(self) -> int:
        """Run and acknowledge queued transfers; returns how many were acknowledged."""
        return self.queue.poll()

    # ---- eviction and device memory --------------------------------------------------------

    def evict_device(self, *, full_tokens: int = 0, mamba_slots: int = 0) -> EvictResult:
        """Evict from device (backing up first under write_back) and free into the allocators."""
        if self.policy.backup_on_evict:
            result = evict_writing_back(self.transfers, self.backup, full_tokens, mamba_slots)
        else:
            result = self.tree.evict(full_tokens=full_tokens, mamba_slots=mamba_slots)
        self.traffic.evicted(Tier.DEVICE, result)
        self.device.free_tokens(result.full_indices)
        self.device.free_states(result.mamba_slots)
        return result

    def evict_host(self, *, full_tokens: int = 0, mamba_slots: int = 0) -> EvictResult:
        """Host LRU eviction (leaves; states tombstoned on internal nodes); frees host slots."""
        result = self.tree.evict_host(full_tokens=full_tokens, mamba_slots=mamba_slots)
        self.traffic.evicted(Tier.HOST, result)
        self.host.free_kv(result.full_indices)
        self.host.free_states(result.mamba_slots)
        return result

    def make_host_room(self, num_tokens: int, num_state_slots: int) -> None:
        sizes = self.host.sizes()
        short_tokens = max(0, num_tokens - sizes.kv_free_tokens)
        short_slots = max(0, num_state_slots - sizes.state_free_slots)
        if short_tokens or short_slots:
            self.evict_host(full_tokens=short_tokens, mamba_slots=short_slots)

    def alloc_device_tokens(self, num_tokens: int) -> np.ndarray | None:
        """Whole fresh device pages for `num_tokens`, evicting device LRU entries if short."""
        allocator = self.device.token_allocator
        if num_tokens == 0:
            return np.zeros(0, dtype=np.int64)
        if allocator.available_tokens < num_tokens:
            self.evict_device(full_tokens=num_tokens - allocator.available_tokens)
        return allocator.alloc(num_tokens)

    def alloc_device_state(self) -> int | None:
        allocator = self.device.state_allocator
        if allocator is None:
            return None
        if allocator.num_free == 0:
            self.evict_device(mamba_slots=1)
        slots = allocator.alloc(1)
        return None if slots is None else int(slots[0])

    # ---- accounting ------------------------------------------------------------------------

    def check_integrity(self, request_receipts: Iterable[LockReceipt] | None = None) -> None:
        """Both tiers: the tree, every pool, each index the tree holds allocated exactly once
        (host: resident + in flight == used), and every lock receipt owned — by an in-flight
        transfer or, when the caller passes its running requests' receipts, by one of them
        (`kvledger.host.tiers`)."""
        check_tiers(self.transfers, request_receipts)
