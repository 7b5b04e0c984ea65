"""Integrity across both tiers: what the tree references against what the pools hand out.

Laws (each failure raises IntegrityError naming it):
1. the tree, every host pool and the device allocators pass their own checks;
2. host: every host page and state slot the tree references is allocated, none twice, and
   resident + in flight == used (nothing leaks, nothing is referenced after a free);
3. device: every device page and state slot the tree references is allocated, none twice
   (requests hold more device pages than the tree, so only inclusion can be checked here).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from kvledger.host.backup import concat
from kvledger.host.runs import slots_to_pages
from kvledger.pools.errors import IntegrityError
from kvledger.tree import Node

if TYPE_CHECKING:
    from kvledger.host.controller import HiCacheController


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


def check_tiers(ctrl: HiCacheController) -> None:
    tree, host, device = ctrl.tree, ctrl.host, ctrl.device
    tree.check_integrity()
    host.check_integrity()
    device.token_allocator.check_integrity()
    if device.state_allocator is not None:
        device.state_allocator.check_integrity()
    nodes = _nodes(tree.root)
    page = tree.page_size
    host_kv = concat([n.full.host_value for n in nodes if n.full.host_value is not None])
    host_states = np.array([n.mamba.host_value for n in nodes if n.mamba.host_value is not None],
                           dtype=np.int64)
    host_pages = slots_to_pages(host_kv, page)
    _unique(host_pages, "host KV page")
    _unique(host_states, "host state slot")
    if host_pages.size and not host.kv.pages.is_allocated(host_pages).all():
        raise IntegrityError("the tree references a host KV page that is free")
    used_tokens = host.kv.num_used_tokens
    if host_kv.size + ctrl.inflight.host_tokens != used_tokens:
        raise IntegrityError(f"host KV: resident {host_kv.size} + in flight "
                             f"{ctrl.inflight.host_tokens} != used {used_tokens} tokens")
    used_slots = 0 if host.state is None else host.state.slots.num_used
    if host_states.size and (host.state is None
                             or not host.state.slots.is_allocated(host_states).all()):
        raise IntegrityError("the tree references a host state slot that is free")
    if host_states.size + ctrl.inflight.host_state_slots != used_slots:
        raise IntegrityError(f"host states: resident {host_states.size} + in flight "
                             f"{ctrl.inflight.host_state_slots} != used {used_slots} slots")
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
