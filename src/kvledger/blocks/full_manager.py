"""The attention group: vLLM's `FullAttentionManager` (`single_type_kv_cache_manager.py`).

A hit is the run of consecutive cached blocks from the prompt start
(`FullAttentionManager.find_longest_cache_hit`); every full block the request computes is
cached (`cache_blocks` with no mask); a block per ``B`` tokens is allocated
(`allocate_new_blocks`: ``cdiv(num_tokens, B) − len(table)``).

>>> from kvledger.blocks.pool import BlockPool
>>> pool = BlockPool(num_blocks=8, num_groups=1)
>>> fa = FullAttentionManager(pool, group=0, block_size_tokens=4)
>>> fa.allocate(0, end_tokens=10, boundaries=set()); _ = fa.cache(0, [1, 2], 10, set())
>>> fa.free(0); len(fa.find_longest_cache_hit([1, 2, 3], max_blocks=3))
2
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet

from kvledger.blocks.manager import GroupManager


class FullAttentionManager(GroupManager):

    def find_longest_cache_hit(self, block_hashes: list[int], max_blocks: int) -> list[int]:
        # The chain breaks at the first miss: no later block can be cached.
        return self.pool.cached_prefix(block_hashes[:max_blocks], self.group)

    def add_hit(self, rid: int, hit_blocks: list[int]) -> None:
        self.pool.touch(hit_blocks)
        self.req_to_blocks[rid] = list(hit_blocks)
        self.num_cached_block[rid] = len(hit_blocks)

    def num_new_blocks(self, num_held_blocks: int, end_tokens: int,
                       boundaries: AbstractSet[int]) -> int:
        return max(0, -(-end_tokens // self.block_size_tokens) - num_held_blocks)

    def allocate(self, rid: int, *, end_tokens: int, boundaries: AbstractSet[int]) -> None:
        table = self.blocks(rid)
        num = self.num_new_blocks(len(table), end_tokens, boundaries)
        if num:
            table.extend(self.pool.get_new_blocks(num))

    def cache(self, rid: int, block_hashes: list[int], num_tokens: int,
              boundaries: AbstractSet[int]) -> int:
        return self._cache(rid, block_hashes, num_tokens)

    def remove_skipped_blocks(self, rid: int, computed_tokens: int) -> None:
        """Full attention never skips a block."""
