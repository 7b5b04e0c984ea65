"""Tree nodes: a page-aligned run of token ids plus one record per component.

A node owns ``key``: the token ids of its edge, stored as the raw bytes of an int64 array so
that matching is one ``bytes.startswith`` (a memcmp) and the child map is keyed by the bytes of
the child's first page. Each node carries two :class:`ComponentData` records:

* ``full``  — FULL attention KV: ``value`` holds one device token slot per key token,
  ``host_value`` one host token slot per key token.
* ``mamba`` — the linear-attention state after the node's last token: ``value`` is exactly
  one device state slot, ``host_value`` one host state slot.

Residency rules (enforced by ``RadixTree.check_integrity``):

1. FULL on device is root-connected: a node's FULL ``value`` implies its parent's.
2. FULL on host is root-connected likewise (backups go ancestors first).
3. Every non-root node holds FULL on device, on host, or both; a node with neither is removed.
4. A MAMBA state on a tier implies FULL on the same tier (a state without its KV is useless).

>>> node = Node(node_id=1, parent=None, key=np.arange(4, dtype=TOKEN_DTYPE).tobytes())
>>> node.num_tokens, node.tokens.tolist(), node.full.value is None
(4, [0, 1, 2, 3], True)
"""

from __future__ import annotations

from enum import Enum, IntEnum

import numpy as np

# Token ids and slot indices are int64 so torch's default index dtype and numpy's default
# integer pass through without a copy or a range check.
TOKEN_DTYPE = np.int64
TOKEN_BYTES = 8  # bytes per token id in a key
INDEX_DTYPE = np.int64


class Component(Enum):
    """The cache components a node carries a record for."""

    FULL = "full"  # full-attention KV, one slot per token
    MAMBA = "mamba"  # linear-attention state, one slot per node


class Tier(IntEnum):
    """Where a value lives. Also the index of that tier in per-tier lists."""

    DEVICE = 0  # HBM
    HOST = 1  # DRAM

    @property
    def other(self) -> Tier:
        return Tier(1 - self)


class ComponentData:
    """One component's values and pins on one node, per tier (the tree owns all writes).

    ``values[tier]``: FULL, a read-only int64 array with one slot per key token; MAMBA, one
    int slot. ``locks[tier]`` pins that value against eviction on that tier.
    """

    __slots__ = ("values", "locks")

    def __init__(self) -> None:
        self.values: list = [None, None]
        self.locks = [0, 0]

    @property
    def value(self):
        return self.values[Tier.DEVICE]

    @property
    def host_value(self):
        return self.values[Tier.HOST]

    @property
    def lock_ref(self) -> int:
        return self.locks[Tier.DEVICE]

    @property
    def host_lock_ref(self) -> int:
        return self.locks[Tier.HOST]


class Node:
    """A radix-tree node. Read its fields freely; change them only through ``RadixTree``."""

    __slots__ = (
        "id",
        "parent",
        "children",
        "key",
        "full",
        "mamba",
        "last_access",
        "num_children_on",
        "alive",
    )

    def __init__(self, *, node_id: int, parent: Node | None, key: bytes) -> None:
        self.id = node_id
        self.parent = parent
        self.children: dict[bytes, Node] = {}  # first page's bytes -> child
        self.key = key
        self.full = ComponentData()
        self.mamba = ComponentData()
        self.last_access = 0  # logical clock; FULL eviction picks the smallest
        self.num_children_on = [0, 0]  # per tier: children holding FULL on that tier
        self.alive = True  # False once removed from the tree

    @property
    def num_tokens(self) -> int:
        return len(self.key) // TOKEN_BYTES

    @property
    def tokens(self) -> np.ndarray:
        """The key as a read-only int64 array (a view, no copy)."""
        return np.frombuffer(self.key, dtype=TOKEN_DTYPE)

    def component(self, component: Component) -> ComponentData:
        match component:
            case Component.FULL:
                return self.full
            case Component.MAMBA:
                return self.mamba

    def prefix_tokens(self) -> int:
        """Tokens from the root to the end of this node."""
        total = 0
        node: Node | None = self
        while node is not None:
            total += len(node.key)
            node = node.parent
        return total // TOKEN_BYTES

    def __repr__(self) -> str:
        return f"Node(id={self.id}, tokens={self.num_tokens})"
