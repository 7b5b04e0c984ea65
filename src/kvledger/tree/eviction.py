"""Eviction policies for both tiers. They pick victims and return indices; nothing is freed here.

FULL, leaf first by least recent use: only a node with no child on that tier and no lock can
lose its KV, so residency stays root-connected. The node's state on that tier goes with its
KV. A node with a copy on the other tier stays (as host-only or device-only); otherwise it is
removed, and parents left childless and stateless are pruned.

MAMBA, by least recent use of the state (a state is refreshed only when a request consumes
it): an internal node loses just its state and stays as a tombstone, its KV still serving
deeper matches; a node left with no children and no state anywhere is pruned with its KV.

Worked example (page 1): ``abc`` and ``abd`` share ``ab``, whose node has no state (it was
created by a split). Evicting one state drops the least recently used leaf ``c`` (state and
KV); ``ab`` keeps serving ``abd``::

    root -- ab -- c*      evict(mamba_slots=1)      root -- ab -- d*
               \\- d*     ------------------->
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from kvledger.tree.core import (
    EMPTY_INDICES,
    TreeCore,
    is_device_leaf,
    is_host_leaf,
    mamba_host_unlocked,
    mamba_unlocked,
)
from kvledger.tree.results import EvictResult

if TYPE_CHECKING:
    from kvledger.tree.node import Node


def _result(full: list[np.ndarray], mamba: list[int]) -> EvictResult:
    if not full:
        full_indices = EMPTY_INDICES
    elif len(full) == 1:
        full_indices = full[0]
    else:
        full_indices = np.concatenate(full)
    return EvictResult(full_indices=full_indices, mamba_slots=np.array(mamba, dtype=np.int64))


def evict_device(core: TreeCore, full_tokens: int, mamba_slots: int) -> EvictResult:
    """Free at least ``full_tokens`` device KV slots and ``mamba_slots`` device states, or all
    that can go. Slots freed as a side effect (a leaf's state, a pruned parent) count too."""
    freed_full: list[np.ndarray] = []
    freed_mamba: list[int] = []
    num_full = 0
    while num_full < full_tokens:
        node = core.device_leaves.pop(is_device_leaf)
        if node is None:
            break
        num_full += _evict_device_leaf(core, node, freed_full, freed_mamba)
    victims = core.mamba_lru.oldest(mamba_slots - len(freed_mamba), mamba_unlocked)
    for node in victims:
        freed_mamba.append(core._mamba_device_off(node))
        _prune_device(core, node, freed_full)
    return _result(freed_full, freed_mamba)


def _evict_device_leaf(
    core: TreeCore, node: Node, freed_full: list[np.ndarray], freed_mamba: list[int]
) -> int:
    if node.mamba.value is not None:
        freed_mamba.append(core._mamba_device_off(node))
    value = core._full_device_off(node)
    freed_full.append(value)
    num_freed = len(value)
    if node.full.host_value is None:
        parent = node.parent
        core._remove_node(node)
        num_freed += _prune_device(core, parent, freed_full)
    return num_freed


def evict_host(core: TreeCore, full_tokens: int, mamba_slots: int) -> EvictResult:
    """Host counterpart of ``evict_device``; returns host indices."""
    freed_full: list[np.ndarray] = []
    freed_mamba: list[int] = []
    num_full = 0
    while num_full < full_tokens:
        node = core.host_leaves.pop(is_host_leaf)
        if node is None:
            break
        num_full += _evict_host_leaf(core, node, freed_full, freed_mamba)
    victims = core.host_mamba_lru.oldest(mamba_slots - len(freed_mamba), mamba_host_unlocked)
    for node in victims:
        freed_mamba.append(core._mamba_host_off(node))
        _prune_host(core, node, freed_full)
    return _result(freed_full, freed_mamba)


def _evict_host_leaf(
    core: TreeCore, node: Node, freed_full: list[np.ndarray], freed_mamba: list[int]
) -> int:
    if node.mamba.host_value is not None:
        freed_mamba.append(core._mamba_host_off(node))
    host_value = core._full_host_off(node)
    freed_full.append(host_value)
    num_freed = len(host_value)
    if node.full.value is None:
        parent = node.parent
        core._remove_node(node)
        num_freed += _prune_host(core, parent, freed_full)
    return num_freed


def _prune_device(core: TreeCore, node: Node, freed_full: list[np.ndarray]) -> int:
    """Drop device KV of childless, stateless, unlocked nodes from ``node`` upwards.

    Such a node can never be a match point (no state at or below it), so its KV is dead
    weight; the node itself goes too unless its KV is backed up on host."""
    num_freed = 0
    while (
        node.parent is not None
        and not node.children
        and node.mamba.value is None
        and node.mamba.host_value is None
        and node.full.lock_ref == 0
    ):
        if node.full.value is not None:
            value = core._full_device_off(node)
            freed_full.append(value)
            num_freed += len(value)
        if node.full.host_value is not None:
            break
        parent = node.parent
        core._remove_node(node)
        node = parent
    return num_freed


def _prune_host(core: TreeCore, node: Node, freed_full: list[np.ndarray]) -> int:
    """Host counterpart of ``_prune_device``, for host-only nodes."""
    num_freed = 0
    while (
        node.parent is not None
        and not node.children
        and node.mamba.value is None
        and node.mamba.host_value is None
        and node.full.value is None
        and node.full.host_lock_ref == 0
    ):
        host_value = core._full_host_off(node)
        freed_full.append(host_value)
        num_freed += len(host_value)
        parent = node.parent
        core._remove_node(node)
        node = parent
    return num_freed
