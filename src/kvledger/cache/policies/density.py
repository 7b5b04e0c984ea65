"""Hit-density state eviction: the state least likely to be reused per slot-time leaves first.

LRU assumes a state is worth less the longer it waits. When reuse comes late (a chat turn
answered minutes later, hundreds of requests on, while the device holds a few dozen
states) LRU evicts every state just before its reuse. Least hit density (LHD, Beckmann,
Chen and Cidon, NSDI 2018) ranks by what the trace has shown instead::

    density(a) = E[reuses still to come | age a] / E[slot-time still to hold | age a]

    with   E[reuses | a]    = Σ_{x ≥ a} hits(x)
           E[holding | a]   = Σ_{x ≥ a} (hits(x) + evictions(x)) · (x − a + 1)

where hits(x) and evictions(x) count lifetimes that ended at age x (a request resumed from
the state, or the cache dropped it). Ages are in admitted requests (one `observe` each),
binned by powers of two (bin b holds ages 2^(b−1) .. 2^b − 1), and every `decay_every`
admissions the counts halve, so the ranking follows the trace. A state's age restarts when
a request resumes from it. With no evidence yet every density is 0 and the order is LRU.

A state's birth is the first `pick` that sees it (each pick walks the candidates); a
request that resumes from a state no pick has seen yet counts its age from the last pick.

>>> d = HitDensity()
>>> d.hits[3], d.evictions[1] = 10.0, 10.0     # reuses at ages 4-7; evictions at age 1
>>> d.density_of(1) < d.density_of(4)   # reuse comes late: a young state goes before one near it
True
>>> round(d.density_of(0), 3), round(d.density_of(4), 3)
(0.118, 0.4)
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from kvledger.cache.policies.eviction import LruEviction, NodeHashes
from kvledger.tree.lru import LruList
from kvledger.tree.node import Node, Tier

NUM_BINS = 24  # ages up to 2^23 requests
_MEMO = 1 << 16  # node ids and prefix hashes remembered, cleared past this


def _bin(age: int) -> int:
    return min(max(age, 0).bit_length(), NUM_BINS - 1)


# a representative age per bin: 0, 1, then the middle of 2^(b-1) .. 2^b - 1
_MID = np.array([0.0, 1.0] + [1.5 * (1 << (b - 1)) - 0.5 for b in range(2, NUM_BINS)])


class HitDensity(LruEviction):
    """See the module; on the host tier, LRU."""

    name = "hit-density"
    needs_hashes = True

    def __init__(self, *, decay_every: int = 4096) -> None:
        self.hits = np.zeros(NUM_BINS)
        self.evictions = np.zeros(NUM_BINS)
        self.decay_every = decay_every
        self.now = 0  # requests admitted (observe calls)
        self._last_scan = 0
        self._birth: dict[int, int] = {}  # prefix hash → request count at birth or last reuse
        self._hash = NodeHashes(_MEMO)  # node → the hash of the prefix it ends

    def density_of(self, age: int) -> float:
        b = _bin(age)
        events = self.hits[b:] + self.evictions[b:]
        holding = float(np.dot(events, np.maximum(_MID[b:] - age, 0.0) + 1.0))
        return float(self.hits[b:].sum()) / holding if holding > 0 else 0.0

    def _born(self, node: Node) -> int:
        if len(self._birth) >= _MEMO:
            self._birth.clear()
        return self._birth.setdefault(self._hash(node), self.now)

    def pick(self, tier: Tier, states: LruList, count: int,
             eligible: Callable[[Node], bool]) -> list[Node]:
        if tier is not Tier.DEVICE or count <= 0:
            return states.oldest(count, eligible)
        candidates = [node for node in states if eligible(node)]
        self._last_scan = self.now
        ages = [self.now - self._born(node) for node in candidates]
        if not candidates:
            return []
        by_bin: dict[int, float] = {}
        scores = [by_bin.setdefault(_bin(a), self.density_of(a)) for a in ages]
        order = np.argsort(np.array(scores), kind="stable")[:count]  # ties: LRU order
        victims = [candidates[i] for i in order]
        for i in order:
            self.evictions[_bin(ages[i])] += 1
        for node in victims:
            self._birth.pop(self._hash(node), None)
        return victims

    def observe(self, hashes: np.ndarray | None, prompt_pages: int, usable_pages: int) -> None:
        self.now += 1
        if hashes is not None and 0 < usable_pages <= len(hashes):
            h = int(hashes[usable_pages - 1])
            born = self._birth.get(h, self._last_scan)
            self.hits[_bin(self.now - born)] += 1
            self._birth[h] = self.now  # a reused state's age restarts
        if self.now % self.decay_every == 0:
            self.hits /= 2
            self.evictions /= 2

    def check_integrity(self) -> None:
        if (self.hits < 0).any() or (self.evictions < 0).any():
            raise RuntimeError("hit-density counts went negative")
