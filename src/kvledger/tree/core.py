"""Tree state and the primitive transitions that keep sizes and recency orders in step.

Every change to a node's values or locks goes through one method here, so the per-tier
sizes, the recency orders and the per-node child residency counts can never drift apart.
Each method takes the tier it acts on (a ``Tier`` or its int value: hot paths pass a plain
int, which indexes the per-tier lists on CPython's fast path); device and host follow the
same rules.
``RadixTree`` builds its operations from these; ``check_integrity`` recomputes everything
from scratch and compares.

Assumptions: a FULL lock on a tier is only taken on a node holding FULL on that tier, and
covers all its ancestors, which then hold FULL on that tier too (residency is
root-connected). A MAMBA lock on a node implies a FULL lock on the same node and tier.
"""

from __future__ import annotations

from functools import partial
from math import lcm

import numpy as np

from kvledger.tree.lru import LRU_STATES, LeafHeap, LruList
from kvledger.tree.node import TOKEN_BYTES, Component, Node, Tier
from kvledger.tree.results import LockReceipt, TierSizes
from kvledger.tree.rules import UNIFIED_TREE, TreeRules
from kvledger.tree.tokens import readonly

EMPTY_INDICES = readonly(np.zeros(0, dtype=np.int64))
FULL_MAMBA = (Component.FULL, Component.MAMBA)  # hybrid models: KV plus linear-attention state
FULL_ONLY = (Component.FULL,)  # dense models, and the non-hybrid baseline (SGLang's RadixCache)


def is_leaf(tier: Tier, node: Node) -> bool:
    """FULL-evictable on ``tier``: held there, unlocked there, no child holding it there."""
    return (
        node.parent is not None
        and node.full.values[tier] is not None
        and node.full.locks[tier] == 0
        and node.num_children_on[tier] == 0
    )


def state_unlocked(tier: Tier, node: Node) -> bool:
    return node.mamba.locks[tier] == 0


class TierBook:
    """Sizes and eviction orders of one tier."""

    __slots__ = (
        "tier",
        "full_evictable_tokens",
        "full_protected_tokens",
        "mamba_evictable_slots",
        "mamba_protected_slots",
        "leaves",
        "states",
        "is_leaf",
        "state_unlocked",
    )

    def __init__(self, tier: Tier) -> None:
        self.tier = tier
        self.full_evictable_tokens = 0
        self.full_protected_tokens = 0
        self.mamba_evictable_slots = 0
        self.mamba_protected_slots = 0
        self.leaves = LeafHeap()  # FULL eviction candidates, by last access
        self.states = LruList()  # nodes holding a state on this tier, by last consumption
        self.is_leaf = partial(is_leaf, tier)  # predicates for the eviction walks
        self.state_unlocked = partial(state_unlocked, tier)

    def sizes(self) -> TierSizes:
        return TierSizes(
            full_evictable_tokens=self.full_evictable_tokens,
            full_protected_tokens=self.full_protected_tokens,
            mamba_evictable_slots=self.mamba_evictable_slots,
            mamba_protected_slots=self.mamba_protected_slots,
        )

    def check_integrity(self) -> None:
        self.leaves.check_integrity()
        self.states.check_integrity()


class TreeCore:
    """Structure, per-tier books and primitive transitions; see ``RadixTree`` for the API."""

    def __init__(self, *, page_size: int, mamba_chunk_tokens: int = 64,
                 components: tuple[Component, ...] = FULL_MAMBA,
                 rules: TreeRules = UNIFIED_TREE) -> None:
        for name, value in (("page_size", page_size), ("mamba_chunk_tokens", mamba_chunk_tokens)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: expected a positive integer, got {value!r}")
        if tuple(components) not in (FULL_MAMBA, FULL_ONLY):
            raise ValueError(f"components: expected {FULL_MAMBA} or {FULL_ONLY}, got {components!r}")
        if not isinstance(rules, TreeRules):
            raise ValueError(f"rules: expected a TreeRules, got {rules!r}")
        self.components = tuple(components)
        self.has_state = Component.MAMBA in self.components
        self.rules = rules
        self.page_size = page_size
        self.page_bytes = page_size * TOKEN_BYTES
        # A state can only be saved where a linear-attention chunk and a page both end
        # (SGLang runtime_context.mamba_checkpoint_grid: lcm(mamba_cache_chunk_size, page)).
        self.mamba_checkpoint_tokens = lcm(mamba_chunk_tokens, page_size)
        self.root = Node(node_id=0, parent=None, key=b"")
        # The root is the empty prefix: present on both tiers, never locked or evicted.
        self.root.full.values = [EMPTY_INDICES, EMPTY_INDICES]
        self._next_node_id = 1
        self._next_receipt_id = 1
        self._clock = 0
        self.receipts: dict[int, LockReceipt] = {}
        self.books = (TierBook(Tier.DEVICE), TierBook(Tier.HOST))
        self.state_victims = LRU_STATES  # which states eviction takes first (a policy object)

    # ---- structure -------------------------------------------------------------------------

    def _new_node(self, parent: Node, key: bytes) -> Node:
        node = Node(node_id=self._next_node_id, parent=parent, key=key)
        self._next_node_id += 1
        parent.children[key[: self.page_bytes]] = node
        return node

    def _remove_node(self, node: Node) -> None:
        assert not node.children, f"{node!r}: removing a node that still has children"
        assert node.full.values[0] is None and node.full.values[1] is None, (
            f"{node!r}: removing a node that holds KV"
        )
        assert node.mamba.values[0] is None and node.mamba.values[1] is None, (
            f"{node!r}: removing a node with a state"
        )
        parent = node.parent
        assert parent is not None, "the root is never removed"
        removed = parent.children.pop(node.key[: self.page_bytes])
        assert removed is node, f"{node!r}: parent maps its first page to {removed!r}"
        node.alive = False

    def _split(self, child: Node, num_tokens: int) -> Node:
        """Cut ``child`` after ``num_tokens``; the new parent takes the FULL slices and locks
        on both tiers, no MAMBA state (a state belongs to the end of the original node)."""
        cut = num_tokens * TOKEN_BYTES
        assert 0 < cut < len(child.key) and cut % self.page_bytes == 0, f"bad cut {num_tokens}"
        grand = child.parent
        parent = self._new_node(grand, child.key[:cut])  # replaces child under its first page
        child.key = child.key[cut:]
        child.parent = parent
        parent.children[child.key[: self.page_bytes]] = child
        full, upper = child.full, parent.full
        for tier, value in enumerate(full.values):
            if value is not None:
                upper.values[tier], full.values[tier] = value[:num_tokens], value[num_tokens:]
                parent.num_children_on[tier] = 1
        upper.locks = full.locks.copy()
        # SGLang stamps the new parent on creation, then the child as just accessed
        # (UnifiedTreeCore._split_node: child.last_access_time = get_and_increase_time_counter()),
        # so the suffix outlives the prefix that was split off it.
        self._touch(parent)
        self._touch(child)
        return parent

    def _touch(self, node: Node) -> None:
        self._clock += 1
        node.last_access = self._clock
        values, locks, kids = node.full.values, node.full.locks, node.num_children_on
        for tier in (0, 1):  # is_leaf on each tier, inlined: this runs for every walked node
            if values[tier] is not None and locks[tier] == 0 and kids[tier] == 0:
                self.books[tier].leaves.push(node)

    # ---- residency -------------------------------------------------------------------------

    def _full_on(self, tier: Tier, node: Node, value: np.ndarray) -> None:
        full, book = node.full, self.books[tier]
        assert full.values[tier] is None and len(value) == node.num_tokens, f"{node!r} FULL"
        full.values[tier] = value
        if full.locks[tier]:
            book.full_protected_tokens += len(value)
        else:
            book.full_evictable_tokens += len(value)
        node.parent.num_children_on[tier] += 1
        if node.num_children_on[tier] == 0 and full.locks[tier] == 0:
            book.leaves.push(node)

    def _full_off(self, tier: Tier, node: Node) -> np.ndarray:
        full, book = node.full, self.books[tier]
        assert full.locks[tier] == 0, f"{node!r}: evicting locked {Tier(tier).name} KV"
        assert node.mamba.values[tier] is None, (
            f"{node!r}: KV leaves {Tier(tier).name} before state"
        )
        value = full.values[tier]
        full.values[tier] = None
        book.full_evictable_tokens -= len(value)
        parent = node.parent
        parent.num_children_on[tier] -= 1
        if is_leaf(tier, parent):
            book.leaves.push(parent)
        return value

    def _mamba_on(self, tier: Tier, node: Node, slot: int) -> None:
        state, book = node.mamba, self.books[tier]
        assert state.values[tier] is None, f"{node!r}: already holds a {Tier(tier).name} state"
        assert node.full.values[tier] is not None, f"{node!r}: state without {Tier(tier).name} KV"
        state.values[tier] = slot
        if state.locks[tier]:
            book.mamba_protected_slots += 1
        else:
            book.mamba_evictable_slots += 1
        book.states.add(node)

    def _mamba_off(self, tier: Tier, node: Node) -> int:
        state, book = node.mamba, self.books[tier]
        assert state.locks[tier] == 0, f"{node!r}: evicting a locked {Tier(tier).name} state"
        slot = state.values[tier]
        assert slot is not None, f"{node!r}: no {Tier(tier).name} state to drop"
        state.values[tier] = None
        book.mamba_evictable_slots -= 1
        book.states.remove(node)
        return slot

    # ---- locks -----------------------------------------------------------------------------

    def _lock(self, tier: Tier, node: Node, delta: int, mamba: bool) -> None:
        """Add ``delta`` (+1/-1) to the FULL lock on ``tier`` of ``node`` and its ancestors, and
        to its MAMBA lock if ``mamba``; move sizes between evictable and protected on 0 <-> 1."""
        book = self.books[tier]
        flipped = 1 if delta > 0 else 0  # the count right after a 0 <-> 1 transition
        if mamba:
            state = node.mamba
            assert state.values[tier] is not None and state.locks[tier] + delta >= 0, f"{node!r}"
            state.locks[tier] += delta
            if state.locks[tier] == flipped:
                book.mamba_evictable_slots -= delta
                book.mamba_protected_slots += delta
        while node.parent is not None:
            full = node.full
            value = full.values[tier]
            assert value is not None and full.locks[tier] + delta >= 0, f"{node!r}: lock"
            full.locks[tier] += delta
            if full.locks[tier] == flipped:
                book.full_evictable_tokens -= delta * len(value)
                book.full_protected_tokens += delta * len(value)
                if flipped == 0 and node.num_children_on[tier] == 0:
                    book.leaves.push(node)
            node = node.parent
