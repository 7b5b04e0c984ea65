"""Integrity across both tiers: what the tree references and what transfers own, against what
the pools hand out and the locks the tree counts.

Laws (each failure raises IntegrityError naming it):
1. the tree, every host pool and the device allocators pass their own checks;
2. host: every host page and state slot the tree references is allocated, none twice, and
   resident + in flight == used (nothing leaks, nothing is referenced after a free); what
   in-flight transfers allocated is allocated and not referenced by the tree;
3. device: every device page and state slot the tree references is allocated, none twice
   (requests hold more device pages than the tree, so only inclusion can be checked here);
   what in-flight loadbacks allocated is allocated and not referenced by the tree;
4. locks: every receipt an in-flight transfer holds is outstanding; every outstanding host
   receipt belongs to an in-flight transfer (nothing else holds a host lock between calls);
   given the running requests' receipts, every outstanding device receipt belongs to exactly
   one owner; the in-flight counters equal the sum over in-flight transfers;
5. with verification on: every host page the tree references was last backed up from the
   prefix it stands for (two nodes' host indices swapped break this).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from kvledger.host.runs import slots_to_pages
from kvledger.host.transfers import Transfers
from kvledger.pools.errors import IntegrityError
from kvledger.tree import LockReceipt, Node, Tier
from kvledger.tree.walk import chain_key, concat


def _nodes(root: Node) -> list[Node]:
    nodes, stack = [], list(root.children.values())
    while stack:
        node = stack.pop()
        nodes.append(node)
        stack.extend(node.children.values())
    return nodes


def _unique(values: np.ndarray, what: str) -> None:
    if np.unique(values).size != values.size:
        raise IntegrityError(f"the tree references a {what} twice")


def _apart(owned: np.ndarray, referenced: np.ndarray, what: str) -> None:
    if owned.size and np.isin(owned, referenced).any():
        raise IntegrityError(f"an in-flight transfer owns a {what} the tree references")


def check_tiers(transfers: Transfers,
                request_receipts: Iterable[LockReceipt] | None = None) -> None:
    tree, host, device = transfers.tree, transfers.host, transfers.device
    tree.check_integrity()
    host.check_integrity()
    device.token_allocator.check_integrity()
    if device.state_allocator is not None:
        device.state_allocator.check_integrity()
    nodes = _nodes(tree.root)
    page = tree.page_size
    flights = list(transfers.flights.values())
    host_kv = concat([n.full.host_value for n in nodes if n.full.host_value is not None])
    host_states = np.array([n.mamba.host_value for n in nodes if n.mamba.host_value is not None],
                           dtype=np.int64)
    host_pages = slots_to_pages(host_kv, page)
    _unique(host_pages, "host KV page")
    _unique(host_states, "host state slot")
    if host_pages.size and not host.kv.pages.is_allocated(host_pages).all():
        raise IntegrityError("the tree references a host KV page that is free")
    used_tokens = host.kv.num_used_tokens
    if host_kv.size + transfers.inflight.host_tokens != used_tokens:
        raise IntegrityError(f"host KV: resident {host_kv.size} + in flight "
                             f"{transfers.inflight.host_tokens} != used {used_tokens} tokens")
    used_slots = 0 if host.state is None else host.state.slots.num_used
    if host_states.size and (host.state is None
                             or not host.state.slots.is_allocated(host_states).all()):
        raise IntegrityError("the tree references a host state slot that is free")
    if host_states.size + transfers.inflight.host_state_slots != used_slots:
        raise IntegrityError(f"host states: resident {host_states.size} + in flight "
                             f"{transfers.inflight.host_state_slots} != used {used_slots} slots")
    flight_host_kv = slots_to_pages(concat([f.host_kv for f in flights]), page)
    if flight_host_kv.size and not host.kv.pages.is_allocated(flight_host_kv).all():
        raise IntegrityError("an in-flight backup owns a host KV page that is free")
    _apart(flight_host_kv, host_pages, "host KV page")
    _apart(concat([f.host_states for f in flights]), host_states, "host state slot")
    dev_kv = concat([n.full.value for n in nodes if n.full.value is not None])
    dev_pages = slots_to_pages(dev_kv, page)
    _unique(dev_pages, "device KV page")
    if dev_pages.size and not device.token_allocator.pages.is_allocated(dev_pages).all():
        raise IntegrityError("the tree references a device KV page that is free")
    dev_states = np.array([n.mamba.value for n in nodes if n.mamba.value is not None],
                          dtype=np.int64)
    _unique(dev_states, "device state slot")
    if dev_states.size and (device.state_allocator is None
                            or not device.state_allocator.is_allocated(dev_states).all()):
        raise IntegrityError("the tree references a device state slot that is free")
    flight_dev_kv = slots_to_pages(concat([f.device_kv for f in flights]), page)
    if flight_dev_kv.size and not device.token_allocator.pages.is_allocated(flight_dev_kv).all():
        raise IntegrityError("an in-flight loadback owns a device KV page that is free")
    _apart(flight_dev_kv, dev_pages, "device KV page")
    _apart(concat([f.device_states for f in flights]), dev_states, "device state slot")
    _check_receipts(transfers, request_receipts)
    if transfers.digests is not None:
        _check_prefixes(transfers, page)


def _check_receipts(transfers: Transfers,
                    request_receipts: Iterable[LockReceipt] | None) -> None:
    outstanding = transfers.tree.receipts
    held = [r for f in transfers.flights.values() for r in f.receipts]
    for receipt in held:
        if outstanding.get(receipt.receipt_id) is not receipt:
            raise IntegrityError(f"an in-flight transfer holds {receipt!r}, already unlocked")
    held_ids = {r.receipt_id for r in held}
    if len(held_ids) != len(held):
        raise IntegrityError("two in-flight transfers hold one receipt")
    for receipt in outstanding.values():
        if receipt.tier is Tier.HOST and receipt.receipt_id not in held_ids:
            raise IntegrityError(f"host lock {receipt!r} has no owner: no in-flight transfer "
                                 "holds it (a leaked host lock)")
    if request_receipts is not None:
        owners = dict.fromkeys(held_ids, "a transfer")
        for receipt in request_receipts:
            if receipt.receipt_id in owners:
                raise IntegrityError(f"{receipt!r} is held by a request and {owners[receipt.receipt_id]}")
            owners[receipt.receipt_id] = "a request"
        leaked = [r for r in outstanding.values() if r.receipt_id not in owners]
        if leaked:
            raise IntegrityError(f"{len(leaked)} device lock(s) have no owner, first {leaked[0]!r}")
        gone = [rid for rid in owners if rid not in outstanding]
        if gone:
            raise IntegrityError(f"receipt {gone[0]} is held but no longer outstanding")
    inflight = transfers.inflight
    sums = (sum(len(f.host_kv) for f in transfers.flights.values()),
            sum(len(f.host_states) for f in transfers.flights.values()),
            sum(len(f.device_kv) for f in transfers.flights.values()),
            sum(len(f.device_states) for f in transfers.flights.values()))
    counted = (inflight.host_tokens, inflight.host_state_slots, inflight.device_tokens,
               inflight.device_state_slots)
    if sums != counted:
        raise IntegrityError(f"in-flight counters {counted} != Σ in-flight transfers {sums}")


def _check_prefixes(transfers: Transfers, page: int) -> None:
    """Walk the tree with chained page keys (`page_prefix_keys`, one pass): every host page
    the tree references holds a backup of the prefix it stands for."""
    digests = transfers.digests
    assert digests is not None
    stack: list[tuple[Node, bytes]] = [(c, b"") for c in transfers.tree.root.children.values()]
    while stack:
        node, prev = stack.pop()
        tokens, host_value = node.tokens, node.full.host_value
        for i, first in enumerate(range(0, tokens.size, page)):
            prev = chain_key(prev, tokens[first : first + page])
            if host_value is not None:
                host_page = int(host_value[i * page]) // page
                if not digests.holds(host_page, prev):
                    raise IntegrityError(f"{node!r}: host page {host_page} does not hold a "
                                         "backup of this prefix (host indices swapped?)")
        stack.extend((c, prev) for c in node.children.values())
