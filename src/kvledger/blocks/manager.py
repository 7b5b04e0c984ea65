"""What every group's manager shares: vLLM's `SingleTypeKVCacheManager`
(`vllm/v1/core/single_type_kv_cache_manager.py`).

A manager keeps, per running request, its block table (``req_to_blocks``: one entry per
block position, `NULL_BLOCK` where the group keeps nothing) and how many leading positions
are already cached (``num_cached_block``). `free` hands the table back in reverse, so the
tail blocks (the least shared) enter the free queue first and are evicted first
(`SingleTypeKVCacheManager.free`).
"""

from __future__ import annotations

from collections import Counter

from kvledger.blocks.pool import NULL_BLOCK, BlockPool


class GroupManager:
    """Block tables of one group; subclasses say how hits are found and blocks allocated."""

    def __init__(self, pool: BlockPool, group: int, block_size_tokens: int) -> None:
        self.pool = pool
        self.group = group
        self.block_size_tokens = block_size_tokens
        self.req_to_blocks: dict[int, list[int]] = {}
        self.num_cached_block: dict[int, int] = {}

    def blocks(self, rid: int) -> list[int]:
        return self.req_to_blocks.setdefault(rid, [])

    def free(self, rid: int) -> None:
        table = self.req_to_blocks.pop(rid, [])
        self.pool.free_blocks(reversed(table))
        self.num_cached_block.pop(rid, None)

    def references(self) -> Counter[int]:
        """How many table positions name each real block (a hit block shared by two running
        requests is named twice)."""
        return Counter(b for table in self.req_to_blocks.values() for b in table
                       if b != NULL_BLOCK)

    def check_integrity(self) -> None:
        """Every block a table names is held, and the cached prefix lies inside the table."""
        for rid, table in self.req_to_blocks.items():
            cached = self.num_cached_block.get(rid, 0)
            if cached > len(table):
                raise RuntimeError(f"group {self.group}: request {rid} has {cached} cached "
                                   f"positions in a table of {len(table)}")
            for block in table:
                if block != NULL_BLOCK and self.pool.ref_cnt[block] < 1:
                    raise RuntimeError(f"group {self.group}: request {rid} names block {block}, "
                                       "which is free")

    def _cache(self, rid: int, block_hashes: list[int], num_tokens: int, keep=None) -> int:
        """Hash the table's blocks from the last cached position to ``num_tokens // B``
        (`BlockPool.cache_full_blocks`) where ``keep(position)`` allows (None: every
        position); returns how many."""
        table = self.req_to_blocks[rid]
        start = self.num_cached_block.get(rid, 0)
        end = num_tokens // self.block_size_tokens
        if keep is None:
            cached = self.pool.cache_blocks(table[start:end], block_hashes[start:end], self.group)
        else:
            # Only real blocks can be cached; a Mamba table is mostly the null block.
            kept = [p for p in range(start, end) if table[p] != NULL_BLOCK and keep(p)]
            cached = self.pool.cache_blocks([table[p] for p in kept],
                                            [block_hashes[p] for p in kept], self.group)
        self.num_cached_block[rid] = max(start, end)
        return cached
