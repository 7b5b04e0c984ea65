"""Prefix identities and a bounded ghost table of prefixes seen before.

A prefix of a request is named by a 64-bit polynomial hash of its page keys: page key k_j
(one int64 per page, equal exactly when the pages' tokens are) is mixed (splitmix64) and
weighted by C^j, C a fixed odd constant, all mod 2^64, so the hash of every prefix of one
sequence is one cumulative sum::

    P_i = Σ_{j ≤ i} mix(k_j) · C^j   (mod 2^64)   names the first i + 1 pages

Two different prefixes collide with probability about 2^-64 per pair, which no replay
approaches. The hash depends on the pages only, never on which request carried them, so a
prefix seen in one request is recognised in another, whether or not the tree still holds it.

`GhostTable` remembers the most recent `capacity` prefix hashes (LRU, 8 bytes of key each):
what has been seen, never the KV or the state. Admission policies use it to find where a
new request meets an earlier one (a branch point) and whether a checkpoint would be reused.

>>> a = prefix_hashes(np.array([5, 6, 7]))
>>> b = prefix_hashes(np.array([5, 6, 9]))
>>> bool(a[1] == b[1]), bool(a[2] == b[2])
(True, False)
>>> g = GhostTable(capacity=2)
>>> g.add(a); len(g), g.seen(int(a[2])), g.seen(int(a[0]))
(2, True, False)
>>> g.deepest_seen(b, limit=3)   # pages of b's longest prefix in the table
2
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

_C = np.uint64(0x9E3779B97F4A7C15)
_POWERS = np.ones(1, dtype=np.uint64)


def _powers(n: int) -> np.ndarray:
    global _POWERS
    if len(_POWERS) < n:
        size = max(n, 2 * len(_POWERS))
        powers = np.empty(size, dtype=np.uint64)
        powers[0] = 1
        with np.errstate(over="ignore"):
            for i in range(1, size):  # once per process, up to the longest sequence
                powers[i] = powers[i - 1] * _C
        _POWERS = powers
    return _POWERS[:n]


def _mix(keys: np.ndarray) -> np.ndarray:
    z = keys.astype(np.uint64)
    with np.errstate(over="ignore"):
        z = (z + np.uint64(0x9E3779B97F4A7C15))
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def prefix_hashes(page_keys: np.ndarray) -> np.ndarray:
    """uint64 hash of every prefix: element i names the first i + 1 pages."""
    n = len(page_keys)
    with np.errstate(over="ignore"):
        return np.cumsum(_mix(page_keys) * _powers(n), dtype=np.uint64)


class GhostTable:
    """The last `capacity` prefix hashes seen, least recent first."""

    __slots__ = ("capacity", "_seen")

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"ghost table capacity {capacity}: expected ≥ 1")
        self.capacity = capacity
        self._seen: OrderedDict[int, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._seen)

    def seen(self, prefix_hash: int) -> bool:
        return prefix_hash in self._seen

    def deepest_seen(self, hashes: np.ndarray, limit: int) -> int:
        """Pages of the longest of the first `limit` prefixes already in the table (0: none).
        The walk goes deepest first: shallow prefixes are the older entries, so the table
        may have dropped them while it still holds deeper ones."""
        seen = self._seen
        candidates = hashes[:limit].tolist()
        for i in range(len(candidates) - 1, -1, -1):
            if candidates[i] in seen:
                return i + 1
        return 0

    def add(self, hashes: np.ndarray) -> None:
        """Record prefixes (refreshing those already present), evicting the oldest."""
        seen = self._seen
        for h in hashes.tolist():
            if h in seen:
                seen.move_to_end(h)
            else:
                seen[h] = None
        while len(seen) > self.capacity:
            seen.popitem(last=False)

    def check_integrity(self) -> None:
        if len(self._seen) > self.capacity:
            raise RuntimeError(f"ghost table holds {len(self._seen)} > {self.capacity} prefixes")
