"""Backup: copy a node's device values to host, ancestors first, recorded on acknowledgement.

For a node N, the backup covers every node on the root→N path whose KV has no host copy
(a suffix of the path, since host residency is root-connected) plus N's state when it has a
device state and no host one. A node already backed up that later gained a state therefore
gets an incremental backup of the state alone.

    root ── A (host) ── B (device only) ── N* (device only, state)
                         └──────── one transfer: KV of B and N, state of N ────────┘

While the transfer is in flight: N's device lock pins the device KV of the path and N's
state (nothing the copy reads can be evicted or freed), and a host lock on A pins the host
copies the new ones will hang from. Host pages are allocated at submission (all-or-nothing,
after host LRU eviction if short) and recorded in the tree only when acknowledged; a failed
transfer frees them. Values are recorded by token range, so a split of B or N while the
transfer is in flight changes nothing. Every lock taken is released on every path that does
not submit (host full, an exception while making room), and by the acknowledgement otherwise.

Whether N's state is copied is the state backup rule's call (`kvledger.host.state_backup`;
SGLang's `all` by default): a declined state leaves N backed up KV-only, and a later backup
of N copies the state alone if the rule then wants it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from kvledger.host.moves import Moves
from kvledger.host.results import BackupOutcome
from kvledger.host.state_backup import STATE_BACKUPS, HostStateBackup, StateBackupRule
from kvledger.host.transfer import Direction
from kvledger.host.transfers import Flight, Transfers
from kvledger.tree import Component, LockReceipt, Node
from kvledger.tree.walk import EMPTY, concat, page_prefix_keys, path_spans

# Old homes of the tree-walk helpers and of Moves (now kvledger.tree.walk, kvledger.host.moves).
__all__ = ["EMPTY", "Moves", "backup", "concat", "path_spans"]

MakeRoom = Callable[[int, int], None]  # (host tokens, host state slots) → evict host LRU


def backup(transfers: Transfers, node: Node, make_room: MakeRoom,
           state_rule: StateBackupRule = STATE_BACKUPS[HostStateBackup.ALL]) -> BackupOutcome:
    """Back up what `node` lacks on host; see the module docstring."""
    tree, host = transfers.tree, transfers.host
    if node.parent is None or node.full.value is None:
        return BackupOutcome.ALREADY  # the root, or a host-only node: nothing on device
    spans = path_spans(node)
    missing = [span for span in spans if span[0].full.host_value is None]
    need_state = (host.state is not None and node.mamba.value is not None
                  and node.mamba.host_value is None)
    if need_state and not state_rule.wants_state(node, free_state_slots=host.state.slots.num_free):
        need_state = False
        transfers.traffic.declined_state_backups += 1
    if not missing and not need_state:
        return BackupOutcome.ALREADY
    start = missing[0][1] if missing else spans[-1][2]
    num_tokens = spans[-1][2] - start
    anchor = missing[0][0].parent if missing else node
    receipts: list[LockReceipt] = []
    allocation = None
    submitted = False
    try:
        if anchor.parent is not None:
            receipts.append(tree.lock_host(anchor))  # the host copies the new ones hang from
        allocation = host.alloc(num_tokens=num_tokens, num_state_slots=int(need_state))
        if allocation is None:
            make_room(num_tokens, int(need_state))
            allocation = host.alloc(num_tokens=num_tokens, num_state_slots=int(need_state))
        if allocation is None:
            return BackupOutcome.HOST_FULL
        receipts.append(tree.lock(node))
        kv_keys = state_keys = ()
        if transfers.verifying:
            keys = page_prefix_keys(node, page_tokens=tree.page_size)
            kv_keys = tuple(keys[start // tree.page_size:])
            state_keys = (keys[-1],) if need_state else ()
        moves = Moves(kv_device=concat([n.full.value for n, _, _ in missing]),
                      kv_host=allocation.kv_slots,
                      state_device=np.array([node.mamba.value] if need_state else [],
                                            dtype=np.int64),
                      state_host=allocation.state_slots, kv_keys=kv_keys, state_keys=state_keys)
        acked: list[BackupOutcome] = []

        def on_ack(ok: bool) -> None:
            if ok:
                _record(transfers, node, start, allocation.kv_slots, allocation.state_slots)
            else:
                host.free(allocation)
            acked.append(BackupOutcome.BACKED_UP if ok else BackupOutcome.FAILED)

        flight = Flight(receipts=receipts, host_kv=allocation.kv_slots,
                        host_states=allocation.state_slots)
        submitted = True
        transfers.submit(Direction.BACKUP, moves, flight, on_ack)
    finally:
        if not submitted:
            if allocation is not None:
                host.free(allocation)
            transfers.release(receipts)
    return acked[0] if acked else BackupOutcome.QUEUED


def _record(transfers: Transfers, node: Node, start: int, kv_slots: np.ndarray,
            state_slots: np.ndarray) -> None:
    """Record host values root-first; pages another transfer already recorded are freed.

    Everything is recorded before anything is freed. If recording raises midway
    (KeyboardInterrupt included), the slots the tree did not take are freed before the error
    propagates: what was recorded is a valid root-first backup, the rest is free again."""
    tree, host = transfers.tree, transfers.host
    pieces = [(n, kv_slots[first - start : end - start])
              for n, first, end in path_spans(node) if end > start]
    try:
        for n, piece in pieces:
            if n.full.host_value is None:
                tree.set_host_value(n, Component.FULL, piece)
        if len(state_slots) and node.mamba.host_value is None:
            tree.set_host_value(node, Component.MAMBA, int(state_slots[0]))
    finally:
        # pages another transfer recorded first, or (after an error) not recorded at all
        host.free_kv(concat([p for n, p in pieces if not _holds(n.full.host_value, p)]))
        if len(state_slots) and node.mamba.host_value != int(state_slots[0]):
            host.free_states(state_slots)


def _holds(value: np.ndarray | None, piece: np.ndarray) -> bool:
    return value is not None and np.array_equal(value, piece)
