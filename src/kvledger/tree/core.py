"""Tree state and the primitive transitions that keep sizes and recency orders in step.

Every change to a node's values or locks goes through one method here, so the counters
(evictable/protected per component and tier), the recency orders and the per-node child
residency counts can never drift apart. ``RadixTree`` builds its operations from these;
``check_integrity`` recomputes everything from scratch and compares.

Assumptions: a FULL lock (device or host) is only ever taken on a node holding FULL on that
tier, and covers all its ancestors, which then hold FULL on that tier too (residency is
root-connected). A MAMBA lock on a node implies a FULL lock on the same node and tier.
"""

from __future__ import annotations

from math import lcm

import numpy as np

from kvledger.tree.lru import LeafHeap, LruList
from kvledger.tree.node import TOKEN_BYTES, Node
from kvledger.tree.results import LockReceipt
from kvledger.tree.tokens import readonly

EMPTY_INDICES = readonly(np.zeros(0, dtype=np.int64))


def is_device_leaf(node: Node) -> bool:
    """FULL-evictable on device: on device, unlocked, no child on device."""
    return (
        node.parent is not None
        and node.full.value is not None
        and node.full.lock_ref == 0
        and node.num_device_children == 0
    )


def is_host_leaf(node: Node) -> bool:
    """FULL-evictable on host: on host, no host lock, no child on host."""
    return (
        node.parent is not None
        and node.full.host_value is not None
        and node.full.host_lock_ref == 0
        and node.num_host_children == 0
    )


def mamba_unlocked(node: Node) -> bool:
    return node.mamba.lock_ref == 0


def mamba_host_unlocked(node: Node) -> bool:
    return node.mamba.host_lock_ref == 0


class TreeCore:
    """Structure, counters and recency orders of a radix tree; see ``RadixTree`` for the API."""

    def __init__(self, *, page_size: int, mamba_chunk_tokens: int = 64) -> None:
        for name, value in (("page_size", page_size), ("mamba_chunk_tokens", mamba_chunk_tokens)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: expected a positive integer, got {value!r}")
        self.page_size = page_size
        self.page_bytes = page_size * TOKEN_BYTES
        # A state can only be saved where a linear-attention chunk and a page both end
        # (SGLang runtime_context.mamba_checkpoint_grid: lcm(mamba_cache_chunk_size, page)).
        self.mamba_checkpoint_tokens = lcm(mamba_chunk_tokens, page_size)
        self.root = Node(node_id=0, parent=None, key=b"")
        # The root is the empty prefix: present on both tiers, never locked or evicted.
        self.root.full.value = EMPTY_INDICES
        self.root.full.host_value = EMPTY_INDICES
        self._next_node_id = 1
        self._next_receipt_id = 1
        self._clock = 0
        self.receipts: dict[int, LockReceipt] = {}
        self.device_leaves = LeafHeap()
        self.host_leaves = LeafHeap()
        self.mamba_lru = LruList()
        self.host_mamba_lru = LruList()
        self.full_evictable_tokens = 0
        self.full_protected_tokens = 0
        self.mamba_evictable_slots = 0
        self.mamba_protected_slots = 0
        self.host_full_evictable_tokens = 0
        self.host_full_protected_tokens = 0
        self.host_mamba_evictable_slots = 0
        self.host_mamba_protected_slots = 0

    # ---- structure -------------------------------------------------------------------------

    def _new_node(self, parent: Node, key: bytes) -> Node:
        node = Node(node_id=self._next_node_id, parent=parent, key=key)
        self._next_node_id += 1
        parent.children[key[: self.page_bytes]] = node
        return node

    def _remove_node(self, node: Node) -> None:
        assert not node.children, f"{node!r}: removing a node that still has children"
        assert node.full.value is None and node.full.host_value is None, f"{node!r}: removing KV"
        assert node.mamba.value is None and node.mamba.host_value is None, f"{node!r}: state"
        parent = node.parent
        assert parent is not None, "the root is never removed"
        removed = parent.children.pop(node.key[: self.page_bytes])
        assert removed is node, f"{node!r}: parent maps its first page to {removed!r}"
        node.alive = False

    def _split(self, child: Node, num_tokens: int) -> Node:
        """Cut ``child`` after ``num_tokens``; the new parent takes the FULL slices and locks,
        no MAMBA state (a state belongs to the end of the original node)."""
        cut = num_tokens * TOKEN_BYTES
        assert 0 < cut < len(child.key) and cut % self.page_bytes == 0, f"bad cut {num_tokens}"
        grand = child.parent
        assert grand is not None
        parent = Node(node_id=self._next_node_id, parent=grand, key=child.key[:cut])
        self._next_node_id += 1
        grand.children[parent.key[: self.page_bytes]] = parent
        child.key = child.key[cut:]
        child.parent = parent
        parent.children[child.key[: self.page_bytes]] = child
        full, pfull = child.full, parent.full
        if full.value is not None:
            pfull.value, full.value = full.value[:num_tokens], full.value[num_tokens:]
            parent.num_device_children = 1
        if full.host_value is not None:
            pfull.host_value, full.host_value = (
                full.host_value[:num_tokens],
                full.host_value[num_tokens:],
            )
            parent.num_host_children = 1
        pfull.lock_ref = full.lock_ref
        pfull.host_lock_ref = full.host_lock_ref
        parent.last_access = child.last_access
        return parent

    def _touch(self, node: Node) -> None:
        self._clock += 1
        node.last_access = self._clock
        if is_device_leaf(node):
            self.device_leaves.push(node)
        if is_host_leaf(node):
            self.host_leaves.push(node)

    # ---- FULL residency --------------------------------------------------------------------

    def _full_device_on(self, node: Node, value: np.ndarray) -> None:
        full = node.full
        assert full.value is None and len(value) == node.num_tokens, f"{node!r}: bad FULL value"
        full.value = value
        if full.lock_ref:
            self.full_protected_tokens += len(value)
        else:
            self.full_evictable_tokens += len(value)
        node.parent.num_device_children += 1
        if node.num_device_children == 0 and full.lock_ref == 0:
            self.device_leaves.push(node)

    def _full_device_off(self, node: Node) -> np.ndarray:
        full = node.full
        assert full.lock_ref == 0, f"{node!r}: evicting locked FULL KV"
        assert node.mamba.value is None, f"{node!r}: FULL leaves device before its state"
        value = full.value
        full.value = None
        self.full_evictable_tokens -= len(value)
        parent = node.parent
        parent.num_device_children -= 1
        if parent.num_device_children == 0 and is_device_leaf(parent):
            self.device_leaves.push(parent)
        return value

    def _full_host_on(self, node: Node, host_value: np.ndarray) -> None:
        full = node.full
        assert full.host_value is None and len(host_value) == node.num_tokens, f"{node!r}"
        full.host_value = host_value
        if full.host_lock_ref:
            self.host_full_protected_tokens += len(host_value)
        else:
            self.host_full_evictable_tokens += len(host_value)
        node.parent.num_host_children += 1
        if is_host_leaf(node):
            self.host_leaves.push(node)

    def _full_host_off(self, node: Node) -> np.ndarray:
        full = node.full
        assert full.host_lock_ref == 0, f"{node!r}: evicting host-locked FULL KV"
        assert node.mamba.host_value is None, f"{node!r}: host FULL leaves before host state"
        host_value = full.host_value
        full.host_value = None
        self.host_full_evictable_tokens -= len(host_value)
        parent = node.parent
        parent.num_host_children -= 1
        if parent.num_host_children == 0 and is_host_leaf(parent):
            self.host_leaves.push(parent)
        return host_value

    # ---- MAMBA residency -------------------------------------------------------------------

    def _mamba_device_on(self, node: Node, slot: int) -> None:
        mamba = node.mamba
        assert mamba.value is None and node.full.value is not None, f"{node!r}: bad state"
        mamba.value = slot
        if mamba.lock_ref:
            self.mamba_protected_slots += 1
        else:
            self.mamba_evictable_slots += 1
        self.mamba_lru.add(node)

    def _mamba_device_off(self, node: Node) -> int:
        mamba = node.mamba
        assert mamba.lock_ref == 0 and mamba.value is not None, f"{node!r}: state locked/absent"
        slot = mamba.value
        mamba.value = None
        self.mamba_evictable_slots -= 1
        self.mamba_lru.remove(node)
        return slot

    def _mamba_host_on(self, node: Node, slot: int) -> None:
        mamba = node.mamba
        assert mamba.host_value is None and node.full.host_value is not None, f"{node!r}"
        mamba.host_value = slot
        if mamba.host_lock_ref:
            self.host_mamba_protected_slots += 1
        else:
            self.host_mamba_evictable_slots += 1
        self.host_mamba_lru.add(node)

    def _mamba_host_off(self, node: Node) -> int:
        mamba = node.mamba
        assert mamba.host_lock_ref == 0 and mamba.host_value is not None, f"{node!r}"
        slot = mamba.host_value
        mamba.host_value = None
        self.host_mamba_evictable_slots -= 1
        self.host_mamba_lru.remove(node)
        return slot

    # ---- locks -----------------------------------------------------------------------------

    def _lock_device(self, node: Node, delta: int, mamba: bool) -> None:
        """Add ``delta`` (+1/-1) to the FULL lock of ``node`` and its ancestors, and to its
        MAMBA lock if ``mamba``; move sizes between evictable and protected on 0 <-> 1."""
        if mamba:
            state = node.mamba
            assert state.value is not None and state.lock_ref + delta >= 0, f"{node!r}"
            state.lock_ref += delta
            if state.lock_ref == (1 if delta > 0 else 0):
                self.mamba_evictable_slots -= delta
                self.mamba_protected_slots += delta
        while node.parent is not None:
            full = node.full
            assert full.value is not None and full.lock_ref + delta >= 0, f"{node!r}: lock"
            full.lock_ref += delta
            if full.lock_ref == (1 if delta > 0 else 0):
                self.full_evictable_tokens -= delta * len(full.value)
                self.full_protected_tokens += delta * len(full.value)
                if full.lock_ref == 0 and node.num_device_children == 0:
                    self.device_leaves.push(node)
            node = node.parent

    def _lock_host(self, node: Node, delta: int, mamba: bool) -> None:
        if mamba:
            state = node.mamba
            assert state.host_value is not None and state.host_lock_ref + delta >= 0, f"{node!r}"
            state.host_lock_ref += delta
            if state.host_lock_ref == (1 if delta > 0 else 0):
                self.host_mamba_evictable_slots -= delta
                self.host_mamba_protected_slots += delta
        while node.parent is not None:
            full = node.full
            assert full.host_value is not None and full.host_lock_ref + delta >= 0, f"{node!r}"
            full.host_lock_ref += delta
            if full.host_lock_ref == (1 if delta > 0 else 0):
                self.host_full_evictable_tokens -= delta * len(full.host_value)
                self.host_full_protected_tokens += delta * len(full.host_value)
                if full.host_lock_ref == 0 and node.num_host_children == 0:
                    self.host_leaves.push(node)
            node = node.parent
