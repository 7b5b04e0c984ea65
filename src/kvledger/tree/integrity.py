"""Recompute a tree's sizes, orders and invariants from its nodes and compare.

Checked (any failure raises ``RuntimeError`` naming the node):

* structure: child maps keyed by the child's first page, parent links, whole-page keys;
* residency: FULL on each tier is root-connected, every node holds FULL somewhere, a state on
  a tier implies FULL on that tier, FULL values have one slot per token, MAMBA exactly one;
* locks: never negative, only on values that exist, equal to what the outstanding receipts
  account for (a FULL receipt covers its path, a MAMBA receipt its node);
* accounting: evictable + protected per component and tier equal the sums over nodes;
* recency: every eviction candidate has a live heap entry, every state is in its LRU list;
* ownership: no device or host slot is held by two nodes.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import fields
from typing import TYPE_CHECKING

import numpy as np

from kvledger.tree.core import is_device_leaf, is_host_leaf
from kvledger.tree.node import Node, Tier
from kvledger.tree.results import TreeSizes

if TYPE_CHECKING:
    from kvledger.tree.core import TreeCore


def _nodes(core: TreeCore) -> list[Node]:
    out, stack = [], [core.root]
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(node.children.values())
    return out


def _expected_locks(
    core: TreeCore, problems: list[str]
) -> tuple[Counter, Counter, Counter, Counter]:
    full, mamba, host_full, host_mamba = Counter(), Counter(), Counter(), Counter()
    for receipt in core.receipts.values():
        node = receipt.node
        if not node.alive:
            problems.append(f"receipt {receipt.receipt_id} pins removed {node!r}")
            continue
        on_path, on_node = (full, mamba) if receipt.tier is Tier.DEVICE else (host_full, host_mamba)
        if receipt.mamba_locked:
            on_node[node] += 1
        while node.parent is not None:
            on_path[node] += 1
            node = node.parent
    return full, mamba, host_full, host_mamba


def _check_node(core: TreeCore, node: Node, heaps: tuple[set, set], problems: list[str]) -> None:
    name = repr(node)
    parent = node.parent
    full, state = node.full, node.mamba
    if not node.alive:
        problems.append(f"{name} is reachable but marked removed")
    if not node.key or len(node.key) % core.page_bytes:
        problems.append(f"{name} key of {len(node.key)} bytes is not whole pages")
    if parent.children.get(node.key[: core.page_bytes]) is not node:
        problems.append(f"{name} is not under its first page in its parent's child map")
    for tier, value, parent_value in (
        ("device", full.value, parent.full.value),
        ("host", full.host_value, parent.full.host_value),
    ):
        if value is not None and len(value) != node.num_tokens:
            problems.append(
                f"{name} {tier} FULL has {len(value)} slots for {node.num_tokens} tokens"
            )
        if value is not None and parent_value is None:
            problems.append(f"{name} {tier} FULL is not root-connected")
    if full.value is None and full.host_value is None:
        problems.append(f"{name} holds FULL on neither tier and should have been removed")
    for tier, slot, kv in (
        ("device", state.value, full.value),
        ("host", state.host_value, full.host_value),
    ):
        if slot is not None and not isinstance(slot, int):
            problems.append(f"{name} {tier} MAMBA value {slot!r} is not exactly one slot")
        if slot is not None and kv is None:
            problems.append(f"{name} {tier} MAMBA state without {tier} FULL KV")
    for label, count, held in (
        ("FULL lock_ref", full.lock_ref, full.value),
        ("FULL host_lock_ref", full.host_lock_ref, full.host_value),
        ("MAMBA lock_ref", state.lock_ref, state.value),
        ("MAMBA host_lock_ref", state.host_lock_ref, state.host_value),
    ):
        if count < 0 or (count > 0 and held is None):
            problems.append(
                f"{name} {label}={count} with value {'absent' if held is None else 'present'}"
            )
    children = node.children.values()
    if node.num_device_children != sum(c.full.value is not None for c in children):
        problems.append(f"{name} num_device_children={node.num_device_children} is stale")
    if node.num_host_children != sum(c.full.host_value is not None for c in children):
        problems.append(f"{name} num_host_children={node.num_host_children} is stale")
    stamp = (node.id, node.last_access)
    if is_device_leaf(node) and not (core.device_leaves.has_entry(node) and stamp in heaps[0]):
        problems.append(f"{name} is FULL-evictable on device but has no heap entry")
    if is_host_leaf(node) and not (core.host_leaves.has_entry(node) and stamp in heaps[1]):
        problems.append(f"{name} is FULL-evictable on host but has no heap entry")
    if (state.value is not None) != (node in core.mamba_lru):
        problems.append(f"{name} device state and MAMBA LRU membership disagree")
    if (state.host_value is not None) != (node in core.host_mamba_lru):
        problems.append(f"{name} host state and host MAMBA LRU membership disagree")


def _check_sizes(core: TreeCore, nodes: list[Node], problems: list[str]) -> None:
    sums = Counter()
    for node in nodes[1:]:
        full, state = node.full, node.mamba
        if full.value is not None:
            sums["full_protected_tokens" if full.lock_ref else "full_evictable_tokens"] += len(
                full.value
            )
        if full.host_value is not None:
            key = (
                "host_full_protected_tokens" if full.host_lock_ref else "host_full_evictable_tokens"
            )
            sums[key] += len(full.host_value)
        if state.value is not None:
            sums["mamba_protected_slots" if state.lock_ref else "mamba_evictable_slots"] += 1
        if state.host_value is not None:
            sums[
                "host_mamba_protected_slots"
                if state.host_lock_ref
                else "host_mamba_evictable_slots"
            ] += 1
    for field in (f.name for f in fields(TreeSizes)):
        if getattr(core, field) != sums[field]:
            problems.append(f"{field}={getattr(core, field)} but the nodes hold {sums[field]}")
    if len(core.mamba_lru) != sum(n.mamba.value is not None for n in nodes):
        problems.append("MAMBA LRU holds nodes that are not in the tree")
    if len(core.host_mamba_lru) != sum(n.mamba.host_value is not None for n in nodes):
        problems.append("host MAMBA LRU holds nodes that are not in the tree")


def _check_ownership(nodes: list[Node], problems: list[str]) -> None:
    for tier, kv, states in (
        ("device", [n.full.value for n in nodes], [n.mamba.value for n in nodes]),
        ("host", [n.full.host_value for n in nodes], [n.mamba.host_value for n in nodes]),
    ):
        slots = np.concatenate([v for v in kv if v is not None])
        if len(np.unique(slots)) != len(slots):
            problems.append(f"a {tier} FULL slot is held by two nodes")
        held = [s for s in states if s is not None]
        if len(set(held)) != len(held):
            problems.append(f"a {tier} MAMBA slot is held by two nodes")


def check_tree(core: TreeCore) -> None:
    problems: list[str] = []
    root = core.root
    if (
        root.parent is not None
        or not root.alive
        or len(root.full.value)
        or len(root.full.host_value)
    ):
        problems.append("the root must be alive, parentless and hold no KV")
    if root.mamba.value is not None or root.mamba.host_value is not None:
        problems.append("the root holds no state")
    nodes = _nodes(core)
    heaps = tuple(
        {(n.id, s) for s, _, n in h.entries()} for h in (core.device_leaves, core.host_leaves)
    )
    for node in nodes[1:]:
        _check_node(core, node, heaps, problems)
    full, mamba, host_full, host_mamba = _expected_locks(core, problems)
    for node in nodes:
        for label, actual, expected in (
            ("FULL lock_ref", node.full.lock_ref, full[node]),
            ("MAMBA lock_ref", node.mamba.lock_ref, mamba[node]),
            ("FULL host_lock_ref", node.full.host_lock_ref, host_full[node]),
            ("MAMBA host_lock_ref", node.mamba.host_lock_ref, host_mamba[node]),
        ):
            if actual != expected:
                problems.append(f"{node!r} {label}={actual} but receipts account for {expected}")
    _check_sizes(core, nodes, problems)
    _check_ownership(nodes, problems)
    if problems:
        shown = "; ".join(problems[:5])
        more = f" (+{len(problems) - 5} more)" if len(problems) > 5 else ""
        raise RuntimeError(f"radix tree integrity check failed: {shown}{more}")
