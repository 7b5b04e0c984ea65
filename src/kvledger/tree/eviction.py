"""Eviction on one tier. It picks victims and returns their indices; nothing is freed here.

Device and host follow the same rules:

* FULL, leaf first by least recent use: only a node with no child holding KV on this tier
  and no lock on this tier can lose its KV there, so residency stays root-connected. The
  node's state on this tier goes with its KV. A node with a copy on the other tier stays;
  otherwise it is removed (SGLang ``UnifiedTreeCore.evict_device_leaf``).
* MAMBA, by least recent use of the state (a state is refreshed only when a request consumes
  it; SGLang ``MambaComponent._evict_device_next_node``), or in the order of the tree's
  ``state_victims`` policy (``kvledger.cache.policies`` offers others; the default is
  ``LRU_STATES``): a leaf goes whole, state and KV, as
  in FULL's walk; an internal node loses just its state and stays as a tombstone, its KV
  still serving deeper matches.
* What a removed leaf leaves behind follows the release (``kvledger.tree.rules``): SGLang
  0.5.21+ keeps a stateless parent's KV as a KV-only leaf (FULL's walk evicts it later);
  0.5.20 pruned childless stateless parents with their KV, up to the first stateful one.

Worked example (page 1): ``abc`` and ``abd`` share ``ab``, whose node has no state (it was
created by a split). Evicting one state drops the least recently used leaf ``c`` (state and
KV); ``ab`` keeps serving ``abd``. Evicting ``d``'s state too leaves ``ab`` as a KV-only
leaf under 0.5.21+ rules; under 0.5.20 rules ``ab`` goes with it::

    root -- ab -- c*      evict(mamba_slots=1)      root -- ab -- d*
               \\- d*     ------------------->
"""

from __future__ import annotations

import numpy as np

from kvledger.tree.core import EMPTY_INDICES, TreeCore
from kvledger.tree.node import Component, Node, Tier
from kvledger.tree.results import EvictResult


def evict(core: TreeCore, tier: Tier, full_tokens: int, mamba_slots: int) -> EvictResult:
    """Free at least ``full_tokens`` KV slots and ``mamba_slots`` states on ``tier``, or all
    that can go. Slots freed as a side effect (a leaf's state, a pruned parent) count too."""
    book = core.books[tier]
    freed_full: list[np.ndarray] = []
    freed_mamba: list[int] = []
    num_full = 0
    while num_full < full_tokens:
        node = book.leaves.pop(book.is_leaf)
        if node is None:
            break
        num_full += _evict_leaf(core, tier, node, freed_full, freed_mamba)
    keeps_kv = core.rules.keeps_stateless_kv
    for node in core.state_victims.pick(tier, book.states, mamba_slots - len(freed_mamba),
                                        book.state_unlocked):
        # Leaf-ness is read now: an earlier victim may have been this node's last child.
        if keeps_kv and book.is_leaf(node):
            _evict_leaf(core, tier, node, freed_full, freed_mamba)
            continue
        freed_mamba.append(core._mamba_off(tier, node))
        if not keeps_kv:
            _prune(core, tier, node, freed_full)
    if not freed_full:
        full_indices = EMPTY_INDICES
    else:
        full_indices = freed_full[0] if len(freed_full) == 1 else np.concatenate(freed_full)
    return EvictResult(full_indices=full_indices, mamba_slots=np.array(freed_mamba, dtype=np.int64))


def next_victim(core: TreeCore, tier: Tier, component: Component) -> Node | None:
    """The node whose ``component`` value on ``tier`` ``evict`` drops next: FULL, the least
    recently used evictable leaf (ties by node id); MAMBA, the oldest unlocked state. None
    when nothing unlocked can go. Nothing observable changes."""
    book = core.books[tier]
    match component:
        case Component.FULL:
            return book.leaves.peek(book.is_leaf)
        case Component.MAMBA:
            picked = core.state_victims.pick(tier, book.states, 1, book.state_unlocked)
            return picked[0] if picked else None


def _evict_leaf(
    core: TreeCore, tier: Tier, node: Node, freed_full: list[np.ndarray], freed_mamba: list[int]
) -> int:
    if node.mamba.values[tier] is not None:
        freed_mamba.append(core._mamba_off(tier, node))
    value = core._full_off(tier, node)
    freed_full.append(value)
    num_freed = len(value)
    if node.full.values[tier.other] is None:
        parent = node.parent
        core._remove_node(node)
        if not core.rules.keeps_stateless_kv:
            num_freed += _prune(core, tier, parent, freed_full)
    return num_freed


def _prune(core: TreeCore, tier: Tier, node: Node, freed_full: list[np.ndarray]) -> int:
    """0.5.20 rules (``MambaRadixCache._iteratively_delete_tombstone_leaf``): drop KV on
    ``tier`` of childless, stateless nodes unlocked there, from ``node`` upwards.

    Such a node can never be a match point (no state at or below it), so its KV is dead
    weight; the node itself goes too unless it still holds KV on the other tier."""
    num_freed = 0
    while (
        node.parent is not None
        and not node.children
        and node.mamba.values == [None, None]
        and node.full.locks[tier] == 0
    ):
        if node.full.values[tier] is not None:
            value = core._full_off(tier, node)
            freed_full.append(value)
            num_freed += len(value)
        if node.full.values[tier.other] is not None:
            break
        parent = node.parent
        core._remove_node(node)
        node = parent
    return num_freed


def drop(core: TreeCore, tier: Tier, node: Node, component: Component) -> EvictResult | None:
    """Drop one copy found bad: ``node``'s state on ``tier`` (MAMBA), or ``node``'s KV there
    and everything below it on ``tier`` (FULL: residency is root-connected, so nothing under
    a dropped page can stay). Nodes left with no copy on either tier are removed. Returns
    None, changing nothing, when a lock on ``tier`` pins any of it (a transfer in flight).

    Not a recency decision: the caller names what to drop (a host copy that failed its
    loadback check, so later matches do not load it again only to recompute)."""
    if component is Component.MAMBA:
        if node.mamba.values[tier] is None or node.mamba.locks[tier]:
            return None
        slot = core._mamba_off(tier, node)
        return EvictResult(full_indices=EMPTY_INDICES, mamba_slots=np.array([slot], np.int64))
    order: list[Node] = []  # pre-order; dropped in reverse (leaves first)
    stack = [node]
    while stack:
        n = stack.pop()
        if n.full.values[tier] is None:
            continue
        if n.full.locks[tier] or n.mamba.locks[tier]:
            return None
        order.append(n)
        stack.extend(n.children.values())
    freed_full: list[np.ndarray] = []
    freed_mamba: list[int] = []
    for n in reversed(order):
        if n.mamba.values[tier] is not None:
            freed_mamba.append(core._mamba_off(tier, n))
        freed_full.append(core._full_off(tier, n))
        if n.full.values[tier.other] is None and not n.children:
            core._remove_node(n)
    return EvictResult(full_indices=np.concatenate(freed_full) if freed_full else EMPTY_INDICES,
                       mamba_slots=np.array(freed_mamba, dtype=np.int64))
