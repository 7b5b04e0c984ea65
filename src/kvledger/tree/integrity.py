"""Recompute a tree's sizes, orders and invariants from its nodes and compare.

Checked on each tier (any failure raises ``RuntimeError`` naming the node and tier):

* structure: child maps keyed by the child's first page, parent links, whole-page keys;
* residency: FULL is root-connected, every node holds FULL somewhere, a state implies FULL on
  the same tier, FULL values have one slot per token, MAMBA exactly one slot;
* locks: never negative, only on values that exist, equal to what the outstanding receipts
  account for (a FULL receipt covers its path, a MAMBA receipt its node);
* accounting: evictable + protected per component equal the sums over nodes;
* recency: every eviction candidate has a live heap entry, every state is in its LRU list;
* ownership: no slot is held by two nodes.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import numpy as np

from kvledger.tree.core import TierBook, is_leaf
from kvledger.tree.node import Node, Tier

if TYPE_CHECKING:
    from kvledger.tree.core import TreeCore


def _nodes(core: TreeCore) -> list[Node]:
    out, stack = [], [core.root]
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(node.children.values())
    return out


def _expected_locks(core: TreeCore, tier: Tier, problems: list[str]) -> tuple[Counter, Counter]:
    full, mamba = Counter(), Counter()
    for receipt in core.receipts.values():
        node = receipt.node
        if receipt.tier is not tier:
            continue
        if not node.alive:
            problems.append(f"receipt {receipt.receipt_id} pins removed {node!r}")
            continue
        if receipt.mamba_locked:
            mamba[node] += 1
        while node.parent is not None:
            full[node] += 1
            node = node.parent
    return full, mamba


def _check_structure(core: TreeCore, node: Node, problems: list[str]) -> None:
    if not node.alive:
        problems.append(f"{node!r} is reachable but marked removed")
    if not node.key or len(node.key) % core.page_bytes:
        problems.append(f"{node!r} key of {len(node.key)} bytes is not whole pages")
    if node.parent.children.get(node.key[: core.page_bytes]) is not node:
        problems.append(f"{node!r} is not under its first page in its parent's child map")
    if node.full.values[0] is None and node.full.values[1] is None:
        problems.append(f"{node!r} holds FULL on neither tier and should have been removed")


def _check_node_on(book: TierBook, node: Node, heap: set, problems: list[str]) -> None:
    tier = book.tier
    where = f"{node!r} {tier.name.lower()}"
    kv, state = node.full.values[tier], node.mamba.values[tier]
    if kv is not None and len(kv) != node.num_tokens:
        problems.append(f"{where} FULL has {len(kv)} slots for {node.num_tokens} tokens")
    if kv is not None and node.parent.full.values[tier] is None:
        problems.append(f"{where} FULL is not root-connected")
    if state is not None and not isinstance(state, int):
        problems.append(f"{where} MAMBA value {state!r} is not exactly one slot")
    if state is not None and kv is None:
        problems.append(f"{where} MAMBA state without FULL KV")
    for label, count, held in (
        ("FULL", node.full.locks[tier], kv),
        ("MAMBA", node.mamba.locks[tier], state),
    ):
        if count < 0 or (count > 0 and held is None):
            problems.append(
                f"{where} {label} lock={count} with value {'absent' if held is None else 'present'}"
            )
    holding = sum(c.full.values[tier] is not None for c in node.children.values())
    if node.num_children_on[tier] != holding:
        problems.append(f"{where} child count {node.num_children_on[tier]} is stale ({holding})")
    if is_leaf(tier, node) and not (
        book.leaves.has_entry(node) and (node.id, node.last_access) in heap
    ):
        problems.append(f"{where} FULL is evictable but has no heap entry")
    if (state is not None) != (node in book.states):
        problems.append(f"{where} state and MAMBA LRU membership disagree")


def _check_tier(core: TreeCore, book: TierBook, nodes: list[Node], problems: list[str]) -> None:
    tier, name = book.tier, book.tier.name.lower()
    heap = {(n.id, stamp) for stamp, _, n in book.leaves.entries()}
    for node in nodes[1:]:
        _check_node_on(book, node, heap, problems)
    full_locks, mamba_locks = _expected_locks(core, tier, problems)
    sums = Counter()
    for node in nodes[1:]:
        kv, state = node.full.values[tier], node.mamba.values[tier]
        for label, actual, expected in (
            ("FULL", node.full.locks[tier], full_locks[node]),
            ("MAMBA", node.mamba.locks[tier], mamba_locks[node]),
        ):
            if actual != expected:
                problems.append(
                    f"{node!r} {name} {label} lock={actual} but receipts account for {expected}"
                )
        if kv is not None:
            sums["full_protected_tokens" if node.full.locks[tier] else "full_evictable_tokens"] += (
                len(kv)
            )
        if state is not None:
            sums[
                "mamba_protected_slots" if node.mamba.locks[tier] else "mamba_evictable_slots"
            ] += 1
    for field in (
        "full_evictable_tokens",
        "full_protected_tokens",
        "mamba_evictable_slots",
        "mamba_protected_slots",
    ):
        if getattr(book, field) != sums[field]:
            problems.append(
                f"{name} {field}={getattr(book, field)} but the nodes hold {sums[field]}"
            )
    held = [n.mamba.values[tier] for n in nodes if n.mamba.values[tier] is not None]
    if len(book.states) != len(held):
        problems.append(f"{name} MAMBA LRU holds nodes that are not in the tree")
    if len(set(held)) != len(held):
        problems.append(f"a {name} MAMBA slot is held by two nodes")
    slots = np.concatenate([n.full.values[tier] for n in nodes if n.full.values[tier] is not None])
    if len(np.unique(slots)) != len(slots):
        problems.append(f"a {name} FULL slot is held by two nodes")
    book.check_integrity()


def check_tree(core: TreeCore) -> None:
    problems: list[str] = []
    root = core.root
    if root.parent is not None or not root.alive or any(len(v) for v in root.full.values):
        problems.append("the root must be alive, parentless and hold no KV")
    if root.mamba.values != [None, None] or root.full.locks != [0, 0] or root.mamba.locks != [0, 0]:
        problems.append("the root holds no state and no lock")
    nodes = _nodes(core)
    for node in nodes[1:]:
        _check_structure(core, node, problems)
    for book in core.books:
        _check_tier(core, book, nodes, problems)
    if problems:
        shown = "; ".join(problems[:5])
        more = f" (+{len(problems) - 5} more)" if len(problems) > 5 else ""
        raise RuntimeError(f"radix tree integrity check failed: {shown}{more}")
