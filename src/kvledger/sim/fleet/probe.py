"""What a replica's device cache holds for a prompt, read without touching the tree.

A router that scores replicas by their cache (Dynamo's KV router from KV events, llm-d's
precise prefix-cache scorer, kvledger's state-aware router) sees the cache as the engine's
events report it: the device-resident KV pages of the longest matching prefix. The walk
below follows `RadixTree.match_prefix` but neither splits nodes nor refreshes recency, so
probing every replica for every arrival changes nothing the replay would do.

Two depths, in pages, over at most (prompt − 1) // page pages (the last prompt token is
always computed, as the cache's own admission does):

    kv_pages      consecutive pages whose KV is on the device (a partial node counts)
    usable_pages  the deepest fully matched node that also holds a device state: what a
                  hybrid model can skip; equal to kv_pages for a FULL-only tree

>>> from kvledger.tree import FULL_ONLY, RadixTree
>>> import numpy as np
>>> tree = RadixTree(page_size=1, components=FULL_ONLY)
>>> _ = tree.insert(np.arange(4), np.arange(4), None)
>>> probe(tree, np.array([0, 1, 2, 9, 9]), max_pages=5)
PrefixDepth(kv_pages=3, usable_pages=3)
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from kvledger.tree import RadixTree
from kvledger.tree.node import TOKEN_BYTES, TOKEN_DTYPE, Tier


class PrefixDepth(NamedTuple):
    kv_pages: int
    usable_pages: int


def probe(tree: RadixTree, keys: np.ndarray, *, max_pages: int) -> PrefixDepth:
    """Device-resident prefix depths of `keys[:max_pages]` in `tree` (tree units are pages)."""
    data = np.ascontiguousarray(keys[:max_pages], dtype=TOKEN_DTYPE).tobytes()
    end, unit = len(data), TOKEN_BYTES
    has_state = tree.has_state
    node, pos, kv, usable = tree.root, 0, 0, 0
    while pos < end:
        child = node.children.get(data[pos:pos + unit])
        if child is None or child.full.values[Tier.DEVICE] is None:
            break
        key = child.key
        if data.startswith(key, pos):
            pos += len(key)
            kv = pos // unit
            if not has_state or child.mamba.values[Tier.DEVICE] is not None:
                usable = kv
            node = child
            continue
        common = _common_units(data, pos, key)
        kv = (pos // unit) + common
        if not has_state:
            usable = kv
        break
    return PrefixDepth(kv_pages=kv, usable_pages=usable)


def _common_units(data: bytes, pos: int, key: bytes) -> int:
    a = np.frombuffer(data, dtype=TOKEN_DTYPE)[pos // TOKEN_BYTES:]
    b = np.frombuffer(key, dtype=TOKEN_DTYPE)
    n = min(len(a), len(b))
    differ = np.flatnonzero(a[:n] != b[:n])
    return int(differ[0]) if len(differ) else n
