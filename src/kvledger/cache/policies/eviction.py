"""State eviction: which cached linear-attention states leave the device first.

A policy replaces the tree's default order (``tree.state_victims``, LRU) and answers
``pick(tier, states, count, eligible)``: up to `count` eligible nodes, in eviction order,
changing nothing. The tree then drops them as it always does (an internal node keeps its
KV as a tombstone; a leaf goes with its KV). On the host tier every policy is LRU.

* `LruEviction` — SGLang's: least recently consumed state first.
* `KeepJunctions` — a state at a junction (a node two or more cached branches share, the
  kind vLLM's hybrid prefix cache keeps for shared-prefix reuse) goes only when no other
  state can: non-junction states first, each class by LRU.
* `FlopAware` — Marconi's utility (Pan et al., MLSys 2025): each candidate scores
  ``recency + α · efficiency``, where recency is its LRU rank scaled to [0, 1) (0: oldest),
  efficiency the prefill FLOPs its state saves per byte it holds (the state, plus a leaf's
  own KV, which goes with it), scaled by the largest among the candidates; lowest score
  first. α = 0 is LRU. α is tuned online (`AlphaTuner`): every candidate α's would-be
  victims are remembered by prefix; when a later request could have resumed from one of
  them deeper than it did, that α is charged the FLOPs the request recomputes; every
  `retune_every` requests the least charged α (charges decaying by half) takes over.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

import numpy as np

from kvledger.cache.policies.ghost import prefix_hashes
from kvledger.tree.lru import LruList
from kvledger.tree.node import Node, Tier

FlopsOf = Callable[[int], float]  # prefill FLOPs saved by a state `pages` deep


def _path_keys(node: Node) -> np.ndarray:
    chunks = []
    while node.parent is not None:
        chunks.append(node.tokens)
        node = node.parent
    return np.concatenate(chunks[::-1]) if chunks else np.zeros(0, dtype=np.int64)


def path_hash(node: Node) -> int:
    """The ghost-table name of the prefix a node ends (`ghost.prefix_hashes`)."""
    return int(prefix_hashes(_path_keys(node))[-1])


class NodeHashes:
    """`path_hash` per node id, remembered: a node's prefix never changes while it lives.
    Past ``capacity`` entries the memo starts again empty (bounded memory, same answers)."""

    def __init__(self, capacity: int = 1 << 16) -> None:
        self.capacity = capacity
        self._of: dict[int, int] = {}

    def __call__(self, node: Node) -> int:
        h = self._of.get(node.id)
        if h is None:
            if len(self._of) >= self.capacity:
                self._of.clear()
            h = self._of[node.id] = path_hash(node)
        return h


class LruEviction:
    name = "lru"
    needs_hashes = False  # whether `observe` wants the request's prefix hashes

    def pick(self, tier: Tier, states: LruList, count: int,
             eligible: Callable[[Node], bool]) -> list[Node]:
        return states.oldest(count, eligible)

    def observe(self, hashes: np.ndarray | None, prompt_pages: int, usable_pages: int) -> None:
        return None

    def check_integrity(self) -> None:
        return None


class KeepJunctions(LruEviction):
    name = "keep-junctions"

    def pick(self, tier: Tier, states: LruList, count: int,
             eligible: Callable[[Node], bool]) -> list[Node]:
        if tier is not Tier.DEVICE or count <= 0:
            return states.oldest(count, eligible)
        plain: list[Node] = []
        junctions: list[Node] = []
        for node in states:
            if not eligible(node):
                continue
            if len(node.children) >= 2:
                junctions.append(node)
            else:
                plain.append(node)
                if len(plain) == count:
                    return plain
        return plain + junctions[: count - len(plain)]


class AlphaTuner:
    """Regret per candidate α; see the module docstring."""

    def __init__(self, alphas: Sequence[float], *, memory: int, retune_every: int,
                 flops_of: FlopsOf) -> None:
        self.alphas = tuple(alphas)
        self.index = 0  # the α in use (LRU until evidence says otherwise)
        self.regret = [0.0] * len(self.alphas)
        self.flops_of = flops_of
        self.retune_every = retune_every
        self.memory = memory
        self._victims: dict[int, tuple[int, int]] = {}  # prefix hash → (α mask, pages)
        self._order: deque[tuple[int, int]] = deque()  # (hash, α bit), oldest first
        self._seen_requests = 0
        self.retunes = 0

    @property
    def alpha(self) -> float:
        return self.alphas[self.index]

    def remember(self, bit: int, prefix: int, pages: int) -> None:
        mask, _ = self._victims.get(prefix, (0, pages))
        self._victims[prefix] = (mask | (1 << bit), pages)
        self._order.append((prefix, bit))
        while len(self._order) > self.memory:
            old, old_bit = self._order.popleft()
            entry = self._victims.get(old)
            if entry is None:
                continue
            left = entry[0] & ~(1 << old_bit)
            if left:
                self._victims[old] = (left, entry[1])
            else:
                del self._victims[old]

    def observe(self, hashes: np.ndarray, prompt_pages: int, usable_pages: int) -> None:
        victims = self._victims
        if victims:
            charged = 0
            base = self.flops_of(usable_pages)
            for pages in range(min(prompt_pages, len(hashes)), usable_pages, -1):
                entry = victims.get(int(hashes[pages - 1]))
                if entry is None:
                    continue
                fresh = entry[0] & ~charged
                if fresh:
                    lost = self.flops_of(pages) - base
                    for bit in range(len(self.alphas)):
                        if fresh >> bit & 1:
                            self.regret[bit] += lost
                    charged |= fresh
        self._seen_requests += 1
        if self._seen_requests % self.retune_every == 0:
            best = min(range(len(self.alphas)), key=lambda i: (self.regret[i], i != self.index))
            self.index = best
            self.regret = [r / 2 for r in self.regret]
            self.retunes += 1


class FlopAware(LruEviction):
    name = "flop-aware"
    needs_hashes = True
    ALPHAS = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0)

    def __init__(self, *, flops_of: FlopsOf, slot_bytes: int, page_bytes: int,
                 memory: int, retune_every: int = 32) -> None:
        self.flops_of = flops_of
        self.slot_bytes, self.page_bytes = slot_bytes, page_bytes
        self.tuner = AlphaTuner(self.ALPHAS, memory=memory, retune_every=retune_every,
                                flops_of=flops_of)
        # node id → (prefix pages, prefix hash, FLOPs saved): a node always ends the same prefix (a split
        # gives the new parent a new id and leaves the child's end where it was)
        self._ends: dict[int, tuple[int, int, float]] = {}

    def _end(self, node: Node) -> tuple[int, int, float]:
        end = self._ends.get(node.id)
        if end is None:
            if len(self._ends) > 1 << 16:
                self._ends.clear()  # bounded: recomputed on demand
            keys = _path_keys(node)
            pages = len(keys)
            end = self._ends[node.id] = (pages, int(prefix_hashes(keys)[-1]),
                                         self.flops_of(pages))
        return end

    def _efficiency(self, node: Node) -> float:
        held = self.slot_bytes + (0 if node.children else node.num_tokens * self.page_bytes)
        return self._end(node)[2] / held

    def order(self, candidates: list[Node], alpha: float, effs: np.ndarray) -> list[int]:
        n = len(candidates)
        scores = np.arange(n) / n + alpha * effs
        return np.argsort(scores, kind="stable").tolist()

    def pick(self, tier: Tier, states: LruList, count: int,
             eligible: Callable[[Node], bool]) -> list[Node]:
        if tier is not Tier.DEVICE or count <= 0:
            return states.oldest(count, eligible)
        candidates = [node for node in states if eligible(node)]
        if not candidates:
            return []
        effs = np.array([self._efficiency(node) for node in candidates])
        top = effs.max()
        effs = effs / top if top > 0 else effs
        chosen: list[Node] = []
        for bit, alpha in enumerate(self.tuner.alphas):
            victims = [candidates[i] for i in self.order(candidates, alpha, effs)[:count]]
            if bit == self.tuner.index:
                chosen = victims
            for node in victims:
                pages, prefix, _ = self._end(node)
                self.tuner.remember(bit, prefix, pages)
        return chosen

    def observe(self, hashes: np.ndarray | None, prompt_pages: int, usable_pages: int) -> None:
        if hashes is not None:
            self.tuner.observe(hashes, prompt_pages, usable_pages)
