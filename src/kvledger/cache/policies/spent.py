"""Spent-first state eviction: states whose reuse has been consumed leave first.

A state is *spent* once a request has resumed from it and it is not a junction (fewer than
two cached branches below it). In a multi-turn conversation turn k's state at its prompt's
end serves turn k + 1 exactly once: turn k + 1 resumes from it and saves its own, deeper
state, so turn k's is what no later request is likely to match again. A junction (a shared
system prompt, a document many questions branch from) is kept: its subtree is still being
extended. Spent states go first, least recently consumed first; the rest follow the base
policy's order (LRU, or FLOP-aware), so on a workload with nothing spent the policy is its
base exactly.

Consumption is seen through `observe` (once per admitted request: the prefix hashes of its
sequence and the pages of its usable hit): the hash of the prefix the request resumed from
goes into a bounded ghost table (`ghost.GhostTable`); a node is named by the hash of the
prefix it ends (`eviction.path_hash`), which never changes for a node's lifetime.

>>> from kvledger.tree.lru import LruList
>>> from kvledger.tree.node import Node, Tier
>>> from kvledger.cache.policies.ghost import prefix_hashes
>>> root = Node(node_id=0, parent=None, key=b"")
>>> def child(parent, i, keys):
...     node = Node(node_id=i, parent=parent, key=np.array(keys, dtype=np.int64).tobytes())
...     parent.children[node.key[:8]] = node
...     return node
>>> turn1, other = child(root, 1, [7, 8]), child(root, 2, [9])
>>> states = LruList(); states.add(turn1); states.add(other)
>>> policy = SpentFirst(LruEviction(), capacity=16)
>>> [n.id for n in policy.pick(Tier.DEVICE, states, 1, lambda n: True)]   # LRU: turn1
[1]
>>> states.refresh(turn1)     # turn 2 resumed from turn 1's state ...
>>> policy.observe(prefix_hashes(np.array([7, 8, 5])), prompt_pages=3, usable_pages=2)
>>> [n.id for n in policy.pick(Tier.DEVICE, states, 1, lambda n: True)]   # ... so it is spent
[1]
>>> policy.spent_picks
1
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from kvledger.cache.policies.eviction import LruEviction, NodeHashes
from kvledger.cache.policies.ghost import GhostTable
from kvledger.tree.lru import LruList
from kvledger.tree.node import Node, Tier

# node id → prefix hash, cleared past this size (recomputed on demand): bounded memory
_HASH_MEMO = 1 << 16


class SpentFirst(LruEviction):
    """Spent states first (see the module), then `base`'s order; on both tiers."""

    needs_hashes = True

    def __init__(self, base: LruEviction, *, capacity: int, name: str = "spent-first",
                 again_rate: float = 0.25, window: int = 64) -> None:
        self.base = base
        self.name = name
        self.again_rate = again_rate
        self.window = window
        self.first = 0.0  # decayed consumptions of a prefix not consumed before
        self.again = 0.0  # decayed consumptions of one consumed before
        self.observed = 0
        self.consumed = GhostTable(capacity)  # prefixes a request resumed from
        self.twice = GhostTable(capacity)  # ... and of those, resumed from again
        self.spent_picks = 0  # victims chosen because they were spent
        self._hash = NodeHashes(_HASH_MEMO)

    def is_spent(self, node: Node) -> bool:
        return len(node.children) < 2 and self.consumed.seen(self._hash(node))

    def pick(self, tier: Tier, states: LruList, count: int,
             eligible: Callable[[Node], bool]) -> list[Node]:
        if count <= 0:
            return []
        spent: list[Node] = []
        if len(self.consumed) and self.spent_is_dead:
            for node in states:
                if eligible(node) and self.is_spent(node):
                    spent.append(node)
                    if len(spent) == count:
                        break
        self.spent_picks += len(spent)
        if len(spent) == count:
            return spent
        taken = set(spent)
        rest = self.base.pick(tier, states, count - len(spent),
                              lambda node: node not in taken and eligible(node))
        return spent + rest

    @property
    def spent_is_dead(self) -> bool:
        """Whether consumed states are seldom consumed again (else the base order alone)."""
        return self.again < self.again_rate * (self.first + self.again)

    def observe(self, hashes: np.ndarray | None, prompt_pages: int, usable_pages: int) -> None:
        if hashes is not None and 0 < usable_pages <= len(hashes):
            point = hashes[usable_pages - 1:usable_pages]
            h = int(point[0])
            if not self.consumed.seen(h):
                self.first += 1
            elif not self.twice.seen(h):  # a prefix counts once however often it comes back
                self.again += 1
                self.twice.add(point)
            self.consumed.add(point)
            self.observed += 1
            if self.observed % self.window == 0:
                self.first, self.again = self.first / 2, self.again / 2
        self.base.observe(hashes, prompt_pages, usable_pages)

    def check_integrity(self) -> None:
        self.consumed.check_integrity()
        self.twice.check_integrity()
        self.base.check_integrity()
