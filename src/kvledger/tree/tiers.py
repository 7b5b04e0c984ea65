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

from kvledger.tree.node import Component, Node, Tier
from kvledger.tree.tokens import as_index_array, as_slot, readonly

if TYPE_CHECKING:
    from kvledger.tree.core import TreeCore

# How callers name the copy onto each tier and its argument, for error messages.
_METHOD = {Tier.DEVICE: "restore_device_value", Tier.HOST: "set_host_value"}
_ARGUMENT = {Tier.DEVICE: "indices", Tier.HOST: "host_indices"}
_VERB = {Tier.DEVICE: "load back", Tier.HOST: "back up"}


def record_copy(
    core: TreeCore, tier: Tier, node: Node, component: Component, indices: object
) -> None:
    """Record that ``node``'s ``component`` now also lives on ``tier`` at ``indices``.

    FULL: one slot per key token, and the parent must hold FULL on ``tier`` first.
    MAMBA: one slot, and the node must hold FULL on ``tier`` first.
    """
    method, verb = _METHOD[tier], _VERB[tier]
    if node.parent is None:
        raise ValueError(f"{method}: the root holds nothing to {verb}")
    data = node.component(component)
    if data.values[tier] is not None:
        raise ValueError(f"{method}: {node!r} {component.name} is already on {tier.name.lower()}")
    match component:
        case Component.FULL:
            if node.parent.full.values[tier] is None:
                raise ValueError(f"{method}: {verb} the parent of {node!r} first")
            values = as_index_array(indices, _ARGUMENT[tier], node.num_tokens)
            if tier is Tier.DEVICE:
                core._touch(node)
            core._full_on(tier, node, readonly(values.copy()))
        case Component.MAMBA:
            if node.full.values[tier] is None:
                raise ValueError(f"{method}: {verb} {node!r}'s FULL KV before its state")
            core._mamba_on(tier, node, as_slot(indices, _ARGUMENT[tier]))
