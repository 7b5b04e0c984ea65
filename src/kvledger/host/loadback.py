"""Loadback: stitch a best match back onto the device, KV root-first plus one state.

`match_prefix` may end at a best match whose KV is partly evicted from device (a suffix of
the path is host-only) and whose state may be host-only. Loadback copies the KV (and index
keys) of every evicted node on the path and the best match's state only — not the states
of its ancestors — then copies that state into the request's own slot (copy-on-write: the
tree's slot is never written by a request):

    root ── A (device) ── B (host) ── C* (host, state on host)
    loadback(C): device pages for B and C, one device state slot for C, then
                 copy_slot(C's slot → request slot)

While the transfer is in flight: a host lock on C pins the host copies being read; device
locks on A (the deepest device ancestor) and on the match's last device node pin the device
prefix the request already has. Device pages and the state slot are allocated first,
evicting device LRU entries if short; when even that fails the request recomputes from its
device hit (NO_ROOM). A failed transfer frees them (FAILED) and changes nothing. With
verification on (`Transfers.digests`) the device bytes written are checked against what was
backed up for each page's prefix before the acknowledgement; a mismatch is a FAILED loadback,
and the host copy that failed is dropped once the locks are released (a state alone, or the
node holding the page with its host-only subtree), so later matches stop at the device hit
instead of loading the same bad copy and recomputing again.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from kvledger.host.moves import Moves
from kvledger.host.results import LoadbackResult, LoadStatus
from kvledger.host.transfer import Direction, VerifyFault
from kvledger.host.transfers import Flight, Transfers
from kvledger.tree import Component, LockReceipt, MatchResult, Node
from kvledger.tree.walk import EMPTY, concat, page_prefix_keys, path_spans

AllocTokens = Callable[[int], "np.ndarray | None"]  # device pages, evicting if short
AllocState = Callable[[], "int | None"]  # one device state slot, evicting if short


def _result(status: LoadStatus, node: Node, device_indices: np.ndarray, *, loaded_tokens: int = 0,
            loaded_state: bool = False, request_slot: int | None = None) -> LoadbackResult:
    return LoadbackResult(status=status, node=node, device_indices=device_indices,
                          mamba_slot=node.mamba.value, loaded_tokens=loaded_tokens,
                          loaded_state=loaded_state, request_slot=request_slot)


def loadback(transfers: Transfers, match: MatchResult, request_slot: int | None, *,
             alloc_tokens: AllocTokens, alloc_state: AllocState) -> LoadbackResult:
    """Make `match.best_match_node` usable on device; see the module docstring."""
    tree, best, last = transfers.tree, match.best_match_node, match.last_device_node
    device = transfers.device
    spans = path_spans(best)
    missing = [span for span in spans if span[0].full.value is None]
    need_state = best.parent is not None and best.mamba.value is None
    if not missing and not need_state:
        indices = tree.path_device_indices(best)
        _copy_to_request(transfers, best, request_slot)
        return _result(LoadStatus.DEVICE_HIT, best, indices, request_slot=request_slot)
    start = missing[0][1] if missing else spans[-1][2]
    num_tokens = spans[-1][2] - start
    receipts: list[LockReceipt] = []
    pages = slot = None
    submitted = False
    try:
        receipts.append(tree.lock_host(best))
        for anchor in dict.fromkeys((missing[0][0].parent if missing else best, last)):
            if anchor.parent is not None:
                receipts.append(tree.lock(anchor))
        pages = alloc_tokens(num_tokens)
        slot = alloc_state() if need_state and pages is not None else None
        if pages is None or (need_state and slot is None):
            return _result(LoadStatus.NO_ROOM, last, match.device_indices)
        state_device = np.array([slot] if need_state else [], dtype=np.int64)
        kv_keys = state_keys = ()
        if transfers.verifying:
            keys = page_prefix_keys(best, page_tokens=tree.page_size)
            kv_keys = tuple(keys[start // tree.page_size:])
            state_keys = (keys[-1],) if need_state else ()
        moves = Moves(kv_device=pages,
                      kv_host=concat([n.full.host_value for n, _, _ in missing]),
                      state_device=state_device,
                      state_host=np.array([best.mamba.host_value] if need_state else [],
                                          dtype=np.int64),
                      kv_keys=kv_keys, state_keys=state_keys)
        acked: list[bool] = []

        def on_ack(ok: bool) -> None:
            if ok:
                _restore(transfers, best, start, pages, slot)
                _copy_to_request(transfers, best, request_slot)
            else:
                device.free_tokens(pages)
                device.free_states(state_device)
            acked.append(ok)

        def on_refused(fault: VerifyFault) -> None:
            _drop_refused(transfers, missing, best, fault)

        flight = Flight(receipts=receipts, device_kv=pages, device_states=state_device,
                        on_refused=on_refused)
        submitted = True
        transfers.submit(Direction.LOADBACK, moves, flight, on_ack)
    finally:
        if not submitted:
            device.free_tokens(pages if pages is not None else EMPTY)
            device.free_states(np.array([] if slot is None else [slot], dtype=np.int64))
            transfers.release(receipts)
    if not acked:
        return _result(LoadStatus.QUEUED, last, match.device_indices)
    if not acked[0]:
        return _result(LoadStatus.FAILED, last, match.device_indices)
    return _result(LoadStatus.LOADED, best, tree.path_device_indices(best),
                   loaded_tokens=num_tokens, loaded_state=need_state, request_slot=request_slot)


def _restore(transfers: Transfers, best: Node, start: int, pages: np.ndarray,
             slot: int | None) -> None:
    """Record device values root-first; slots for KV someone re-inserted meanwhile are freed.

    Everything is recorded before anything is freed. If recording raises midway
    (KeyboardInterrupt included), the pages and the slot the tree did not take are freed
    before the error propagates: what was recorded is a valid root-first prefix on device,
    the rest is free again."""
    tree, device = transfers.tree, transfers.device
    pieces = [(n, pages[first - start : end - start])
              for n, first, end in path_spans(best) if end > start]
    try:
        for n, piece in pieces:
            if n.full.value is None:
                tree.restore_device_value(n, Component.FULL, piece)
        if slot is not None and best.mamba.value is None:
            tree.restore_device_value(best, Component.MAMBA, slot)
    finally:
        # pages someone re-inserted meanwhile, or (after an error) not recorded at all
        device.free_tokens(concat([p for n, p in pieces if not _holds(n.full.value, p)]))
        if slot is not None and best.mamba.value != slot:
            device.free_states(np.array([slot], dtype=np.int64))


def _holds(value: np.ndarray | None, piece: np.ndarray) -> bool:
    return value is not None and np.array_equal(value, piece)


def _drop_refused(transfers: Transfers, missing: list, best: Node, fault: VerifyFault) -> None:
    """Drop the host copy a failed check names: a state, or the node holding the page (its
    host-only subtree with it). Left alone if gone meanwhile or pinned by another transfer."""
    if fault.host_state is not None:
        if best.alive and best.mamba.host_value == fault.host_state:
            transfers.drop_host(best, Component.MAMBA)
        return
    page_tokens = transfers.tree.page_size
    for node, _, _ in missing:
        host = node.full.host_value
        if node.alive and host is not None and fault.host_page in set(host // page_tokens):
            transfers.drop_host(node, Component.FULL)
            return


def _copy_to_request(transfers: Transfers, node: Node, request_slot: int | None) -> None:
    """Copy-on-write of the node's state into the request's own slot (never the reverse)."""
    if request_slot is not None and node.mamba.value is not None:
        transfers.device.copy_state(node.mamba.value, request_slot)
