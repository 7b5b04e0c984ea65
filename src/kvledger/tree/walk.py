"""Walking a root→node path: token spans per node, index concatenation, page prefix keys,
and the stamps an insert from a held node gives the path above it.

Callers that act on a whole path (host backups and loadbacks, the cache facade) need where
each node's tokens sit in the request, and a key per page naming the prefix it ends: two
pages hold the same bytes only if they end the same token prefix (KV rows, index keys and
the state after them are functions of the prefix alone).

>>> from kvledger.tree.radix import RadixTree
>>> tree = RadixTree(page_size=2)
>>> r = tree.insert(np.arange(4), np.arange(10, 14), 1)
>>> child = tree.insert(np.arange(6), np.arange(10, 16), 2).node
>>> [(n.num_tokens, first, end) for n, first, end in path_spans(child)]
[(4, 0, 4), (2, 4, 6)]
>>> keys = page_prefix_keys(child, page_tokens=2)
>>> len(keys), keys[:2] == page_prefix_keys(r.node, page_tokens=2)
(3, True)
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

import numpy as np

from kvledger.tree.core import EMPTY_INDICES
from kvledger.tree.node import Tier

if TYPE_CHECKING:
    from kvledger.tree.core import TreeCore
    from kvledger.tree.node import Node

EMPTY = EMPTY_INDICES  # a read-only empty int64 index array


def path_spans(node: Node) -> list[tuple[Node, int, int]]:
    """(node, first token, end token) from the root's child down to `node`."""
    chain: list[Node] = []
    while node.parent is not None:
        chain.append(node)
        node = node.parent
    spans, pos = [], 0
    for n in reversed(chain):
        spans.append((n, pos, pos + n.num_tokens))
        pos += n.num_tokens
    return spans


def concat(arrays: list[np.ndarray]) -> np.ndarray:
    """One int64 array of `arrays` in order (EMPTY for none, the array itself for one)."""
    if not arrays:
        return EMPTY
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)


def path_tokens(node: Node) -> np.ndarray:
    """The token ids from the root to the end of `node`."""
    return concat([n.tokens for n, _, _ in path_spans(node)])


def chain_key(prev: bytes, page: np.ndarray) -> bytes:
    """The prefix key of a page: BLAKE2b-128 of the previous page's key and this page's ids
    (b"" before the first page)."""
    ids = np.ascontiguousarray(page, dtype=np.int64).tobytes()
    return hashlib.blake2b(prev + ids, digest_size=16).digest()


def page_prefix_keys(node: Node, *, page_tokens: int) -> list[bytes]:
    """One key per page of the root→`node` path (`chain_key`), so a key names the whole
    prefix its page ends."""
    tokens = path_tokens(node)
    assert tokens.size % page_tokens == 0, f"{tokens.size} tokens are not whole pages"
    keys, prev = [], b""
    for start in range(0, tokens.size, page_tokens):
        prev = chain_key(prev, tokens[start : start + page_tokens])
        keys.append(prev)
    return keys


def stamp_held_path(core: TreeCore, node: Node, data: bytes) -> int:
    """For ``RadixTree.insert(below=node)``: check that the path to ``node`` is a
    device-resident prefix of the key bytes ``data``, touch it root first as the insert's
    walk from the root does (one recency stamp per node), and return its end in bytes."""
    path = []
    while node.parent is not None:
        if not node.alive or node.full.values[Tier.DEVICE] is None:
            raise ValueError(f"insert: below={node!r} is not a device-resident path")
        path.append(node)
        node = node.parent
    if node is not core.root:
        raise ValueError("insert: below= belongs to another tree")
    pos = 0
    for n in reversed(path):
        if not data.startswith(n.key, pos):
            raise ValueError(f"insert: below={path[0]!r} is not on the path of the tokens")
        pos += len(n.key)
        core._touch(n)
    return pos
