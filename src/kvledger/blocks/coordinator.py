"""The calls that touch every group over one shared pool: vLLM's `KVCacheCoordinator`
(`vllm/v1/core/kv_cache_coordinator.py`: `UnitaryKVCacheCoordinator` for one attention
group, `HybridKVCacheCoordinator` for attention + Mamba).

Lookup (`HybridKVCacheCoordinator.find_longest_cache_hit`, one pass): the attention group's
hit ``F`` (consecutive cached blocks, capped at ``L − 1`` tokens as
`Scheduler._get_local_prefix_cache_hit` asks), then the deepest ``j ≤ F/B`` whose state block
is cached; the hit is ``h = j·B`` and the attention blocks are cut back to ``j``. The
attention-only reach ``F`` is returned too: beyond ``h`` it is the request's
``shared_prefix_boundary``.

Allocation (`KVCacheManager.allocate_slots`): count the blocks every group needs (a cached
hit block counts too: touching takes it out of the free queue) and refuse before changing
anything; touch the hit blocks of every group first (so no group's allocation evicts
another group's hit), then allocate group by group in group order. Freeing walks the groups
in order too, which is what fixes the LRU order of the freed blocks.

Policy (`kvledger.blocks.policy`, vLLM's own rule by default): `state_boundaries` asks the
admission rule which states a request may cache and where its junction is; the eviction rule
sees every block cached and every hash the pool drops, and may reorder the free queue.

>>> from kvledger.blocks.specs import FullAttentionSpec, MambaAlignSpec
>>> c = Coordinator((MambaAlignSpec(block_size_tokens=4), FullAttentionSpec(block_size_tokens=4)),
...                 num_blocks=32)
>>> hit = c.find_longest_cache_hit([1, 2, 3], prompt_tokens=13)
>>> c.allocate_slots(0, hit, end_tokens=13, boundaries={12})
>>> c.cache_blocks(0, [1, 2, 3], 13, boundaries={12}); c.free(0)
>>> c.find_longest_cache_hit([1, 2, 3], prompt_tokens=13)  # the checkpoint at c = 12
CacheHit(hit_tokens=12, attention_hit_tokens=12, attention_blocks=(3, 4, 5), state_blocks=(1,))
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Protocol

from kvledger.blocks.admission import StateBoundaries
from kvledger.blocks.full_manager import FullAttentionManager
from kvledger.blocks.mamba_manager import MambaManager, find_deepest_state
from kvledger.blocks.policy import VLLM_POLICY, BlockPolicy, build_admission, build_eviction
from kvledger.blocks.pool import NULL_BLOCK, BlockPool, PoolError
from kvledger.blocks.specs import FullAttentionSpec, GroupSpec, MambaAlignSpec


@dataclass(frozen=True, slots=True)
class CacheHit:
    hit_tokens: int  # usable hit h: every group holds it
    attention_hit_tokens: int  # F: what the attention group alone holds (>= h)
    attention_blocks: tuple[int, ...]  # the attention group's hit blocks, cut back to h
    state_blocks: tuple[int, ...] = ()  # per Mamba group, the block holding the state at h


class _Manager(Protocol):
    block_size_tokens: int

    def num_new_blocks(self, num_held_blocks: int, end_tokens: int,
                       boundaries: AbstractSet[int]) -> int: ...
    def allocate(self, rid: int, *, end_tokens: int, boundaries: AbstractSet[int]) -> None: ...
    def cache(self, rid: int, block_hashes: list[int], num_tokens: int,
              boundaries: AbstractSet[int]) -> int: ...
    def remove_skipped_blocks(self, rid: int, computed_tokens: int) -> None: ...
    def free(self, rid: int) -> None: ...
    def references(self) -> Counter[int]: ...
    def check_integrity(self) -> None: ...


class Coordinator:
    """One pool, one manager per group spec: exactly one attention group, any number of
    identical Mamba groups (each cached state costs one block in every one of them)."""

    def __init__(self, specs: tuple[GroupSpec, ...], num_blocks: int,
                 policy: BlockPolicy = VLLM_POLICY) -> None:
        sizes = {s.block_size_tokens for s in specs}
        if len(sizes) != 1:
            raise ValueError(f"--block-size: every group needs one block size, got {sorted(sizes)}")
        self.block_size_tokens = sizes.pop()
        self.pool = BlockPool(num_blocks=num_blocks, num_groups=len(specs))
        self.policy = policy
        self.admission = build_admission(policy)
        self.managers: list[_Manager] = []
        self.attention: FullAttentionManager | None = None
        self.mambas: list[MambaManager] = []
        for group, spec in enumerate(specs):
            match spec:
                case FullAttentionSpec():
                    self.attention = FullAttentionManager(self.pool, group, spec.block_size_tokens)
                    self.managers.append(self.attention)
                case MambaAlignSpec():
                    self.mambas.append(MambaManager(self.pool, group, spec))
                    self.managers.append(self.mambas[-1])
        if self.attention is None or sum(isinstance(s, FullAttentionSpec) for s in specs) != 1:
            raise ValueError("coordinator: exactly one full-attention group is supported")
        if len({m.spec for m in self.mambas}) > 1:
            raise ValueError("coordinator: the Mamba groups must share one spec")
        self.eviction = build_eviction(policy, attention_group=self.attention.group,
                                       mamba_groups=[m.group for m in self.mambas])
        if self.eviction.hooks:
            self.pool.on_evict = lambda key: self.eviction.on_evicted(self.pool, key)

    @property
    def mamba(self) -> MambaManager | None:
        """The first Mamba group (all of them allocate and cache alike)."""
        return self.mambas[0] if self.mambas else None

    def find_longest_cache_hit(self, block_hashes: list[int], prompt_tokens: int) -> CacheHit:
        size = self.block_size_tokens
        max_blocks = min(len(block_hashes), (prompt_tokens - 1) // size)
        blocks = self.attention.find_longest_cache_hit(block_hashes, max_blocks)
        j, states = len(blocks), ()
        if self.mambas and j:
            j, states = find_deepest_state(self.mambas, block_hashes, j)
        return CacheHit(hit_tokens=j * size, attention_hit_tokens=len(blocks) * size,
                        attention_blocks=tuple(blocks[:j]), state_blocks=states)

    def state_boundaries(self, block_hashes: list[int], prompt_tokens: int,
                         hit: CacheHit) -> StateBoundaries:
        """The admission rule's junction and cacheable states for a request with ``hit``."""
        return self.admission.boundaries(block_hashes, prompt_tokens, hit,
                                         block_size_tokens=self.block_size_tokens)

    def allocate_slots(self, rid: int, hit: CacheHit | None, *, end_tokens: int,
                       boundaries: AbstractSet[int]) -> None:
        """First chunk: ``hit``; later chunks: None. ``boundaries``: the token counts whose
        state may be cached. Raises PoolError, changing nothing, when the blocks do not fit."""
        pool = self.pool
        need = 0
        if hit is not None:
            held = hit.hit_tokens // self.block_size_tokens
            touched = (*hit.attention_blocks, *hit.state_blocks)
            need += sum(pool.ref_cnt[b] == 0 for b in touched)
        for manager in self.managers:
            have = held if hit is not None else len(manager.req_to_blocks.get(rid, ()))
            need += manager.num_new_blocks(have, end_tokens, boundaries)
        if need > pool.num_free_blocks:
            raise PoolError(f"request {rid} needs {need:,} blocks, {pool.num_free_blocks:,} "
                            "are free or evictable")
        if hit is not None:
            for k, mamba in enumerate(self.mambas):
                mamba.add_hit(rid, held, hit.state_blocks[k] if held else NULL_BLOCK)
            self.attention.add_hit(rid, list(hit.attention_blocks))
        for manager in self.managers:
            manager.allocate(rid, end_tokens=end_tokens, boundaries=boundaries)

    def cache_blocks(self, rid: int, block_hashes: list[int], num_tokens: int,
                     boundaries: AbstractSet[int]) -> None:
        for manager in self.managers:
            manager.cache(rid, block_hashes, num_tokens, boundaries)
        if self.eviction.hooks:
            self.eviction.on_cached(block_hashes[:num_tokens // self.block_size_tokens])

    def remove_skipped_blocks(self, rid: int, computed_tokens: int) -> None:
        for manager in self.managers:
            manager.remove_skipped_blocks(rid, computed_tokens)

    def free(self, rid: int) -> None:
        for manager in self.managers:
            manager.free(rid)

    def check_integrity(self) -> None:
        """The pool's conservation law, each manager's tables, and every block's ref count
        equal to the table positions naming it (no leaked or phantom reference)."""
        self.pool.check_integrity()
        self.admission.check_integrity()
        named: Counter[int] = Counter()
        for manager in self.managers:
            manager.check_integrity()
            named += manager.references()
        ref = self.pool.ref_cnt
        for block in range(1, self.pool.num_blocks):
            if ref[block] != named[block]:
                raise RuntimeError(f"coordinator: block {block} has ref_cnt {ref[block]} but "
                                   f"{named[block]} table position(s) name it")
