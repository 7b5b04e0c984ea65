"""Helpers for tree tests: a slot dispenser and token strips."""

from __future__ import annotations

import numpy as np

from kvledger.tree import Node, RadixTree


class Slots:
    """Hands out fresh, never reused indices, like an allocator that never runs dry."""

    def __init__(self, start: int = 0) -> None:
        self.next = start

    def take(self, count: int) -> np.ndarray:
        out = np.arange(self.next, self.next + count, dtype=np.int64)
        self.next += count
        return out

    def one(self) -> int:
        self.next += 1
        return self.next - 1


def strip(start: int, count: int) -> np.ndarray:
    """``count`` distinct token ids from ``start``."""
    return np.arange(start, start + count, dtype=np.int64)


def insert_fresh(tree: RadixTree, tokens: np.ndarray, kv: Slots, states: Slots):
    return tree.insert(tokens, kv.take(len(tokens)), states.one())


def path_nodes(tree: RadixTree, tokens: np.ndarray) -> list[Node]:
    """Nodes from the root along ``tokens`` that ``tokens`` covers whole (call after a match,
    which splits the node the match ends in)."""
    nodes, node, pos = [], tree.root, 0
    data = np.asarray(tokens, dtype=np.int64).tobytes()
    while pos < len(data):
        child = node.children.get(data[pos : pos + tree.page_bytes])
        if child is None or not data.startswith(child.key, pos):
            break
        nodes.append(child)
        pos += len(child.key)
        node = child
    return nodes
