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
transfer is in flight changes nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from kvledger.host.results import BackupOutcome
from kvledger.host.transfer import Direction
from kvledger.tree import Component, Node

if TYPE_CHECKING:
    from kvledger.host.controller import HiCacheController
    from kvledger.host.group import HostAllocation

EMPTY = np.zeros(0, dtype=np.int64)


class Moves(NamedTuple):
    """One transfer's pairs: device and host token slots, device and host state slots."""

    kv_device: np.ndarray
    kv_host: np.ndarray
    state_device: np.ndarray
    state_host: np.ndarray


def path_spans(node: Node) -> list[tuple[Node, int, int]]:
    """(node, first token, end token) from the root's child down to `node`."""
    chain: list[Node] = []
    while node.parent is not None:
        chain.append(node)
        node = node.parent
    spans, pos = [], 0
    for n in reversed(chain):
        spans.append((n, pos, pos + n.num_tokens))
        pos += n.num_tokens
    return spans


def concat(arrays: list[np.ndarray]) -> np.ndarray:
    if not arrays:
        return EMPTY
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)


def backup(ctrl: HiCacheController, node: Node) -> BackupOutcome:
    """Back up what `node` lacks on host; see the module docstring."""
    tree, host = ctrl.tree, ctrl.host
    if node.parent is None or node.full.value is None:
        return BackupOutcome.ALREADY  # the root, or a host-only node: nothing on device
    spans = path_spans(node)
    missing = [span for span in spans if span[0].full.host_value is None]
    need_state = (host.state is not None and node.mamba.value is not None
                  and node.mamba.host_value is None)
    if not missing and not need_state:
        return BackupOutcome.ALREADY
    start = missing[0][1] if missing else spans[-1][2]
    num_tokens = spans[-1][2] - start
    anchor = missing[0][0].parent if missing else node
    host_receipt = tree.lock_host(anchor) if anchor.parent is not None else None
    allocation = host.alloc(num_tokens=num_tokens, num_state_slots=int(need_state))
    if allocation is None:
        ctrl.make_host_room(num_tokens, int(need_state))
        allocation = host.alloc(num_tokens=num_tokens, num_state_slots=int(need_state))
    if allocation is None:
        if host_receipt is not None:
            tree.unlock(host_receipt)
        return BackupOutcome.HOST_FULL
    device_receipt = tree.lock(node)
    ctrl.inflight.add_host(num_tokens, int(need_state))
    acked: list[BackupOutcome] = []

    def on_ack(ok: bool) -> None:
        ctrl.inflight.add_host(-num_tokens, -int(need_state))
        if ok:
            _record(ctrl, node, start, allocation, need_state)
        else:
            host.free(allocation)
        tree.unlock(device_receipt)
        if host_receipt is not None:
            tree.unlock(host_receipt)
        acked.append(BackupOutcome.BACKED_UP if ok else BackupOutcome.FAILED)

    moves = Moves(kv_device=concat([n.full.value for n, _, _ in missing]),
                  kv_host=allocation.kv_slots,
                  state_device=np.array([node.mamba.value] if need_state else [], dtype=np.int64),
                  state_host=allocation.state_slots)
    ctrl.queue.submit(Direction.BACKUP, payload=moves, on_ack=on_ack)
    return acked[0] if acked else BackupOutcome.QUEUED


def _record(ctrl: HiCacheController, node: Node, start: int, allocation: HostAllocation,
            need_state: bool) -> None:
    """Record host values root-first; pages another transfer already recorded are freed."""
    tree, host = ctrl.tree, ctrl.host
    duplicates: list[np.ndarray] = []
    for n, first, end in path_spans(node):
        if end <= start:
            continue
        piece = allocation.kv_slots[first - start : end - start]
        if n.full.host_value is None:
            tree.set_host_value(n, Component.FULL, piece)
        else:
            duplicates.append(piece)
    host.free_kv(concat(duplicates))
    if need_state:
        if node.mamba.host_value is None:
            tree.set_host_value(node, Component.MAMBA, int(allocation.state_slots[0]))
        else:
            host.free_states(allocation.state_slots)
