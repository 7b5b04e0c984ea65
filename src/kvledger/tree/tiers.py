"""Host-tier hooks: record a finished backup (device -> host) or loadback (host -> device).

The host tier copies the bytes; these only tell the tree where the copy now lives. Order
rules keep residency root-connected on each tier and a state never without its KV:

* backup goes root-first: FULL of a node needs its parent's FULL on host; a node's MAMBA
  state needs the node's FULL on host;
* loadback goes root-first likewise on device.

Worked example (page 1): back up a 3-token node, evict it from device, load it back::

    >>> from kvledger.tree.radix import RadixTree
    >>> tree = RadixTree(page_size=1)
    >>> node = tree.insert([7, 8, 9], full_indices=[0, 1, 2], mamba_slot=4).node
    >>> tree.set_host_value(node, Component.FULL, [100, 101, 102])
    >>> tree.set_host_value(node, Component.MAMBA, 9)
    >>> freed = tree.evict(full_tokens=3)          # KV and state leave the device
    >>> freed.full_indices.tolist(), freed.mamba_slots.tolist(), node.alive
    ([0, 1, 2], [4], True)
    >>> m = tree.match_prefix([7, 8, 9])          # still a hit, on host
    >>> m.device_hit_length, m.host_hit_length, m.best_match_node is node
    (0, 3, True)
    >>> tree.restore_device_value(node, Component.FULL, [20, 21, 22])
    >>> tree.restore_device_value(node, Component.MAMBA, 5)
    >>> tree.match_prefix([7, 8, 9]).device_indices.tolist()
    [20, 21, 22]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvledger.tree.node import Component, Node
from kvledger.tree.tokens import as_index_array, as_slot, readonly

if TYPE_CHECKING:
    from kvledger.tree.core import TreeCore


def record_backup(core: TreeCore, node: Node, component: Component, host_indices: object) -> None:
    """FULL: one host slot per key token (parent backed up first). MAMBA: one host slot
    (the node's FULL backed up first)."""
    if node.parent is None:
        raise ValueError("set_host_value: the root holds nothing to back up")
    match component:
        case Component.FULL:
            if node.full.host_value is not None:
                raise ValueError(f"set_host_value: {node!r} FULL is already on host")
            if node.parent.full.host_value is None:
                raise ValueError(f"set_host_value: back up the parent of {node!r} first")
            values = as_index_array(host_indices, "host_indices", node.num_tokens)
            core._full_host_on(node, readonly(values.copy()))
        case Component.MAMBA:
            if node.mamba.host_value is not None:
                raise ValueError(f"set_host_value: {node!r} MAMBA is already on host")
            if node.full.host_value is None:
                raise ValueError(f"set_host_value: back up {node!r}'s FULL KV before its state")
            core._mamba_host_on(node, as_slot(host_indices, "host_indices"))


def record_loadback(core: TreeCore, node: Node, component: Component, indices: object) -> None:
    """FULL: one device slot per key token (parent on device first). MAMBA: one device
    slot (the node's FULL on device first)."""
    if node.parent is None:
        raise ValueError("restore_device_value: the root holds nothing to load back")
    match component:
        case Component.FULL:
            if node.full.value is not None:
                raise ValueError(f"restore_device_value: {node!r} FULL is already on device")
            if node.parent.full.value is None:
                raise ValueError(f"restore_device_value: load back the parent of {node!r} first")
            values = as_index_array(indices, "indices", node.num_tokens)
            core._touch(node)
            core._full_device_on(node, readonly(values.copy()))
        case Component.MAMBA:
            if node.mamba.value is not None:
                raise ValueError(f"restore_device_value: {node!r} MAMBA is already on device")
            if node.full.value is None:
                raise ValueError(f"restore_device_value: load back {node!r}'s FULL KV first")
            core._mamba_device_on(node, as_slot(indices, "indices"))
