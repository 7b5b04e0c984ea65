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

>>> from kvledger.blocks.specs import FullAttentionSpec, MambaAlignSpec
>>> c = Coordinator((MambaAlignSpec(block_size_tokens=4), FullAttentionSpec(block_size_tokens=4)),
...                 num_blocks=32)
>>> hit = c.find_longest_cache_hit([1, 2, 3], prompt_tokens=13)
>>> c.allocate_slots(0, hit, end_tokens=13, boundaries={12})
>>> c.cache_blocks(0, [1, 2, 3], 13, boundaries={12}); c.free(0)
>>> c.find_longest_cache_hit([1, 2, 3], prompt_tokens=13)  # the checkpoint at c = 12
CacheHit(hit_tokens=12, attention_hit_tokens=12, attention_blocks=(3, 4, 5))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from kvledger.blocks.full_manager import FullAttentionManager
from kvledger.blocks.mamba_manager import MambaManager
from kvledger.blocks.pool import BlockPool, PoolError
from kvledger.blocks.specs import FullAttentionSpec, GroupSpec, MambaAlignSpec


@dataclass(frozen=True, slots=True)
class CacheHit:
    hit_tokens: int  # usable hit h: every group holds it
    attention_hit_tokens: int  # F: what the attention group alone holds (>= h)
    attention_blocks: tuple[int, ...]  # the attention group's hit blocks, cut back to h


class _Manager(Protocol):
    block_size_tokens: int

    def num_new_blocks(self, rid: int, end_tokens: int, boundaries: set[int]) -> int: ...
    def allocate(self, rid: int, *, end_tokens: int, boundaries: set[int]) -> None: ...
    def cache(self, rid: int, block_hashes: list[int], num_tokens: int,
              boundaries: set[int]) -> int: ...
    def remove_skipped_blocks(self, rid: int, computed_tokens: int) -> None: ...
    def free(self, rid: int) -> None: ...
    def num_references(self) -> int: ...


class Coordinator:
    """One pool, one manager per group spec (exactly one attention group)."""

    def __init__(self, specs: tuple[GroupSpec, ...], num_blocks: int) -> None:
        sizes = {s.block_size_tokens for s in specs}
        if len(sizes) != 1:
            raise ValueError(f"--block-size: every group needs one block size, got {sorted(sizes)}")
        self.block_size_tokens = sizes.pop()
        self.pool = BlockPool(num_blocks=num_blocks, num_groups=len(specs))
        self.managers: list[_Manager] = []
        self.attention: FullAttentionManager | None = None
        self.mamba: MambaManager | None = None
        for group, spec in enumerate(specs):
            match spec:
                case FullAttentionSpec():
                    self.attention = FullAttentionManager(self.pool, group, spec.block_size_tokens)
                    self.managers.append(self.attention)
                case MambaAlignSpec():
                    self.mamba = MambaManager(self.pool, group, spec)
                    self.managers.append(self.mamba)
        if self.attention is None or sum(isinstance(s, FullAttentionSpec) for s in specs) != 1:
            raise ValueError("coordinator: exactly one full-attention group is supported")
        if sum(isinstance(s, MambaAlignSpec) for s in specs) > 1:
            raise ValueError("coordinator: at most one Mamba group is supported")
        self._pending: dict[int, tuple[CacheHit, list[int]]] = {}

    def find_longest_cache_hit(self, block_hashes: list[int], prompt_tokens: int) -> CacheHit:
        size = self.block_size_tokens
        max_blocks = min(len(block_hashes), (prompt_tokens - 1) // size)
        blocks = self.attention.find_longest_cache_hit(block_hashes, max_blocks)
        j = len(blocks)
        if self.mamba is not None and j:
            j = self.mamba.find_longest_cache_hit(block_hashes, j)
        return CacheHit(hit_tokens=j * size, attention_hit_tokens=len(blocks) * size,
                        attention_blocks=tuple(blocks[:j]))

    def allocate_slots(self, rid: int, hit: CacheHit | None, *, end_tokens: int,
                       boundaries: set[int], block_hashes: list[int] | None = None) -> None:
        """First chunk: ``hit`` (and ``block_hashes`` for a Mamba hit); later chunks: None.
        Raises PoolError, changing nothing, when the blocks do not fit."""
        pool, size = self.pool, self.block_size_tokens
        need = 0
        if hit is not None:
            j = hit.hit_tokens // size
            need += sum(pool.ref_cnt[b] == 0 for b in hit.attention_blocks)
            if self.mamba is not None and j:
                state = pool.get_cached(block_hashes[j - 1], self.mamba.group)
                need += pool.ref_cnt[state] == 0
            start = j
        else:
            start = None
        for manager in self.managers:
            have = start if start is not None else len(manager.req_to_blocks.get(rid, ()))
            need += self._count(manager, rid, have, end_tokens, boundaries)
        if need > pool.num_free_blocks:
            raise PoolError(f"request {rid} needs {need:,} blocks, {pool.num_free_blocks:,} "
                            "are free or evictable")
        if hit is not None:
            j = hit.hit_tokens // size
            if self.mamba is not None:
                self.mamba.add_hit(rid, j, block_hashes)
            self.attention.add_hit(rid, list(hit.attention_blocks))
        for manager in self.managers:
            manager.allocate(rid, end_tokens=end_tokens, boundaries=boundaries)

    @staticmethod
    def _count(manager: _Manager, rid: int, have_blocks: int, end_tokens: int,
               boundaries: set[int]) -> int:
        table = manager.req_to_blocks.get(rid)
        if table is not None:
            return manager.num_new_blocks(rid, end_tokens, boundaries)
        manager.req_to_blocks[rid] = [0] * have_blocks  # a dry table of the hit's length
        try:
            return manager.num_new_blocks(rid, end_tokens, boundaries)
        finally:
            del manager.req_to_blocks[rid]

    def cache_blocks(self, rid: int, block_hashes: list[int], num_tokens: int,
                     boundaries: set[int]) -> None:
        for manager in self.managers:
            manager.cache(rid, block_hashes, num_tokens, boundaries)

    def remove_skipped_blocks(self, rid: int, computed_tokens: int) -> None:
        for manager in self.managers:
            manager.remove_skipped_blocks(rid, computed_tokens)

    def free(self, rid: int) -> None:
        for manager in self.managers:
            manager.free(rid)

    def check_integrity(self) -> None:
        """The pool's conservation law, and every reference a ref count records is held by
        some request's block table (and no more)."""
        self.pool.check_integrity()
        held = sum(m.num_references() for m in self.managers)
        total = sum(self.pool.ref_cnt)
        if held != total:
            raise RuntimeError(f"coordinator: block tables hold {held} references, ref "
                               f"counts say {total}")
