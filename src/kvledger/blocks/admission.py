"""State admission on vLLM's block cache: which states of a request may get a hash, and
where its prefill stops at a shared-prefix junction.

vLLM 0.33 decides both at admission (`Scheduler.schedule` → `KVCacheManager.
get_computed_blocks`, then `_mamba_block_aligned_split`): the junction is the attention
reach ``F`` when it lies beyond the deepest cached state ``h``, and the states that may be
cached (`MambaManager.reachable_block_mask`'s ``reachable_boundaries``) are the replay
boundary ``c = ⌊(L−1)/B⌋·B`` and that junction, plus every retention interval
(`MambaAlignSpec.reachable`). A prefill checkpoint block is reserved only where such a state
falls (`MambaManager._positions`), so admission also places the checkpoint.

Rules (all lossless: a request resumes only from the exact state a full prefill makes):

* `VllmAdmission` — vLLM's: ``{c, junction}``.
* `JunctionOnly` — the junction alone: no state at a prompt's replay boundary unless it is
  the junction, so a request's own tail state is cached only once another request shares it
  (Marconi's branch points only; a multi-turn follow-up loses its previous turn's state).
* `GhostJunction` — vLLM's set, with the junction found in a bounded table of block hashes
  earlier prompts carried (the chained hash names a whole prefix), not only in the cached
  KV: the deepest block of the prompt any earlier request had, even after its KV was evicted
  or before the earlier request computed it. The chunk stops there and the state is cached.

>>> from kvledger.blocks.coordinator import CacheHit
>>> miss = CacheHit(hit_tokens=0, attention_hit_tokens=0, attention_blocks=())
>>> sorted(VllmAdmission().boundaries([1, 2, 3], 200, miss, block_size_tokens=64).tokens)
[0, 192]
>>> g = GhostJunction(capacity_blocks=8)
>>> _ = g.boundaries([1, 2, 3], 200, miss, block_size_tokens=64)
>>> b = g.boundaries([1, 2, 9], 200, miss, block_size_tokens=64)  # 128 tokens seen before
>>> b.junction_tokens, sorted(b.tokens)
(128, [128, 192])
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvledger.blocks.coordinator import CacheHit


@dataclass(frozen=True, slots=True)
class StateBoundaries:
    """What admission decided for one request."""

    junction_tokens: int  # the prefill stops here so the state is computed; 0: no junction
    tokens: frozenset[int]  # lengths whose state may be cached (retention adds its own)


def replay_boundary_tokens(prompt_tokens: int, block_size_tokens: int) -> int:
    """``c = ⌊(L−1)/B⌋·B``: the deepest state a later request with this prompt can use
    (`replay_boundaries`, vllm/v1/core/kv_cache_utils.py, floored to the block)."""
    return (prompt_tokens - 1) // block_size_tokens * block_size_tokens


def cache_junction(hit: CacheHit) -> int:
    """vLLM's junction: the attention reach when it passes the deepest cached state."""
    return hit.attention_hit_tokens if hit.attention_hit_tokens > hit.hit_tokens else 0


class StateAdmissionRule(ABC):
    name: str

    @abstractmethod
    def boundaries(self, block_hashes: list[int], prompt_tokens: int, hit: CacheHit, *,
                   block_size_tokens: int) -> StateBoundaries:
        """Called once per admission (again after a preemption), with the request's chained
        block hashes and its cache hit."""

    def check_integrity(self) -> None:
        return None


class VllmAdmission(StateAdmissionRule):
    name = "vllm"

    def boundaries(self, block_hashes: list[int], prompt_tokens: int, hit: CacheHit, *,
                   block_size_tokens: int) -> StateBoundaries:
        junction = cache_junction(hit)
        # vLLM's set as the replay always built it (0 when there is no junction: no state
        # ends at 0 tokens, so it admits nothing)
        return StateBoundaries(junction, frozenset(
            {replay_boundary_tokens(prompt_tokens, block_size_tokens), junction}))


class JunctionOnly(StateAdmissionRule):
    name = "junction-only"

    def boundaries(self, block_hashes: list[int], prompt_tokens: int, hit: CacheHit, *,
                   block_size_tokens: int) -> StateBoundaries:
        junction = cache_junction(hit)
        return StateBoundaries(junction, frozenset({junction} if junction else ()))


class GhostJunction(StateAdmissionRule):
    """``capacity_blocks`` hashes at most, least recently seen dropped first (8 B of key
    each in a compiled table; here Python ints)."""

    name = "ghost-junction"

    def __init__(self, capacity_blocks: int) -> None:
        if capacity_blocks < 1:
            raise ValueError(f"ghost table: capacity {capacity_blocks!r}, expected >= 1")
        self.capacity_blocks = capacity_blocks
        self._seen: OrderedDict[int, None] = OrderedDict()

    def _deepest_seen(self, block_hashes: list[int], max_blocks: int) -> int:
        # a chained hash names its whole prefix, so the first unseen block ends the match
        seen, depth = self._seen, 0
        while depth < max_blocks and block_hashes[depth] in seen:
            depth += 1
        return depth

    def _remember(self, block_hashes: list[int]) -> None:
        seen = self._seen
        for block_hash in block_hashes:
            seen[block_hash] = None
            seen.move_to_end(block_hash)
        while len(seen) > self.capacity_blocks:
            seen.popitem(last=False)

    def boundaries(self, block_hashes: list[int], prompt_tokens: int, hit: CacheHit, *,
                   block_size_tokens: int) -> StateBoundaries:
        replay = replay_boundary_tokens(prompt_tokens, block_size_tokens)
        full_blocks = min(len(block_hashes), prompt_tokens // block_size_tokens)
        # the match is capped at L − 1 tokens, as the cache lookup is
        ghost = self._deepest_seen(block_hashes, min(full_blocks, replay // block_size_tokens))
        reach = max(hit.attention_hit_tokens, ghost * block_size_tokens)
        junction = reach if reach > hit.hit_tokens else 0
        self._remember(block_hashes[:full_blocks])
        return StateBoundaries(junction, frozenset({replay, junction}))

    def check_integrity(self) -> None:
        if len(self._seen) > self.capacity_blocks:
            raise RuntimeError(f"ghost table: {len(self._seen)} hashes over its capacity "
                               f"{self.capacity_blocks}")
