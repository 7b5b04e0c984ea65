"""One BlockPool shared by every KV-cache group: vLLM's `BlockPool` (`vllm/v1/core/block_pool.py`).

Block 0 is the null block (`NULL_BLOCK`): popped at construction, never handed out, never
freed, the placeholder for positions a group does not keep (Mamba blocks between states).
Every other block is in exactly one of three states:

    free     ref_cnt 0, no hash      in the free queue (popped first)
    cached   ref_cnt 0, hashed       in the free queue and in the hash map (evictable)
    held     ref_cnt > 0             out of the queue (hashed or not)

so ``free + cached + held == num_blocks − 1`` (`check_integrity`). The free queue is vLLM's
LRU order (`FreeKVCacheBlockQueue`): `get_new_blocks` pops from its head and only then drops
a popped block's hash (lazy eviction, `_maybe_evict_cached_block`); `free_blocks` puts a
block whose ref count reaches 0 at the tail when it is hashed and at the head when it is not,
as vLLM 0.33 does; `touch` takes a cached hit block out of the queue.

Keys fold the group into the hash: ``key = block_hash · num_groups + group`` (vLLM's
`BlockHashWithGroupId`), so each group caches its own block under the same prompt hash.

>>> pool = BlockPool(num_blocks=4, num_groups=1)
>>> a, b = pool.get_new_blocks(2)
>>> pool.cache_block(a, block_hash=9, group=0); pool.free_blocks([b, a])
>>> pool.usage(), pool.get_cached(9, 0) == a
(PoolUsage(free_blocks=2, cached_blocks=1, held_blocks=0), True)
>>> _ = pool.get_new_blocks(3)  # the cached block is popped last and its hash dropped
>>> pool.get_cached(9, 0), pool.evicted_blocks
(None, [1])
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kvledger.blocks.hash_map import HashToBlocks

NULL_BLOCK = 0  # vLLM's null_block: block 0, never allocated, never cached


@dataclass(frozen=True, slots=True)
class PoolUsage:
    free_blocks: int  # in the free queue without a hash
    cached_blocks: int  # in the free queue with a hash (evictable hits)
    held_blocks: int  # referenced by a running request


class PoolError(ValueError):
    """An allocation the pool cannot serve even after evicting every cached block."""


class BlockPool:
    """Blocks, ref counts, the LRU free queue and the hash map, for ``num_groups`` groups."""

    def __init__(self, num_blocks: int, num_groups: int) -> None:
        if num_blocks < 2:
            raise ValueError(f"num_blocks {num_blocks}: need the null block and one more")
        self.num_blocks = num_blocks
        self.num_groups = num_groups
        self.ref_cnt = [0] * num_blocks
        self.block_key: list[int | None] = [None] * num_blocks
        self.free_queue: OrderedDict[int, None] = OrderedDict.fromkeys(range(1, num_blocks))
        self.hash_map = HashToBlocks()
        self.evicted_blocks = [0] * num_groups  # hashes dropped by get_new_blocks, per group
        # an eviction policy's hook, called with each key get_new_blocks drops (vLLM: none)
        self.on_evict: Callable[[int], None] | None = None

    @property
    def num_free_blocks(self) -> int:
        """Blocks an allocation may take now (free and cached alike), as vLLM counts them."""
        return len(self.free_queue)

    def get_cached(self, block_hash: int, group: int) -> int | None:
        return self.hash_map.get(block_hash * self.num_groups + group)

    def touch(self, blocks: Iterable[int]) -> None:
        """A hit: each block gains a reference; a cached one leaves the free queue."""
        ref, queue = self.ref_cnt, self.free_queue
        for block in blocks:
            if block == NULL_BLOCK:
                continue
            if ref[block] == 0:
                del queue[block]
            ref[block] += 1

    def get_new_blocks(self, num_blocks: int) -> list[int]:
        """Pop ``num_blocks`` from the queue head, dropping the hash of each cached one."""
        queue = self.free_queue
        if num_blocks > len(queue):
            raise PoolError(f"need {num_blocks:,} blocks, {len(queue):,} free")
        if self.on_evict is not None:
            return self._get_new_blocks_hooked(num_blocks)
        keys, ref, popitem = self.block_key, self.ref_cnt, queue.popitem
        out = [popitem(last=False)[0] for _ in range(num_blocks)]
        hashed = [block for block in out if keys[block] is not None]
        if hashed:
            dropped = [keys[block] for block in hashed]
            self.hash_map.pop_run(dropped, hashed)
            for block in hashed:
                keys[block] = None
            evicted, groups = self.evicted_blocks, self.num_groups
            if groups == 1:
                evicted[0] += len(hashed)
            else:
                for key in dropped:
                    evicted[key % groups] += 1
        for block in out:
            ref[block] = 1
        return out

    def _get_new_blocks_hooked(self, num_blocks: int) -> list[int]:
        """`get_new_blocks` one block at a time: an eviction hook may move free blocks to the
        queue head, and the next pop of the same allocation must see that order."""
        queue, keys, ref = self.free_queue, self.block_key, self.ref_cnt
        out = []
        for _ in range(num_blocks):
            block, _ = queue.popitem(last=False)
            key = keys[block]
            if key is not None:
                self.hash_map.pop(key, block)
                keys[block] = None
                self.evicted_blocks[key % self.num_groups] += 1
                self.on_evict(key)
            ref[block] = 1
            out.append(block)
        return out

    def cached_prefix(self, block_hashes: list[int], group: int) -> list[int]:
        """The cached blocks of ``group`` for the leading hashes, up to the first miss."""
        return self.hash_map.prefix_run(block_hashes, scale=self.num_groups, offset=group)

    def cache_block(self, block: int, *, block_hash: int, group: int) -> None:
        """Name a held block by its hash (`cache_full_blocks`, one block)."""
        if block == NULL_BLOCK or self.block_key[block] is not None or self.ref_cnt[block] < 1:
            raise RuntimeError(f"block pool: block {block} cannot be cached (null, already "
                               "hashed or not held)")
        key = block_hash * self.num_groups + group
        self.block_key[block] = key
        self.hash_map.insert(key, block)

    def cache_blocks(self, blocks: list[int], block_hashes: list[int], group: int) -> int:
        """`cache_block` for each held block of ``blocks`` that has no hash yet, named by the
        hash at its position (the null block and hashed blocks are skipped, as
        `cache_full_blocks` skips them); returns how many got one."""
        keys, ref, groups = self.block_key, self.ref_cnt, self.num_groups
        named, named_keys = [], []
        for block, block_hash in zip(blocks, block_hashes, strict=True):
            if block == NULL_BLOCK or keys[block] is not None:
                continue
            if ref[block] < 1:
                raise RuntimeError(f"block pool: block {block} cannot be cached (not held)")
            key = block_hash * groups + group
            keys[block] = key
            named.append(block)
            named_keys.append(key)
        self.hash_map.insert_run(named_keys, named)
        return len(named)

    def free_blocks(self, blocks: Iterable[int]) -> None:
        """Drop one reference each, in the order given; a block reaching 0 joins the queue."""
        ref, queue, keys = self.ref_cnt, self.free_queue, self.block_key
        to_head = queue.move_to_end
        for block in blocks:
            if block == NULL_BLOCK:
                continue
            count = ref[block] - 1
            if count < 0:
                raise RuntimeError(f"block pool: block {block} freed with ref_cnt 0")
            ref[block] = count
            if count == 0:
                queue[block] = None
                if keys[block] is None:  # nothing to reuse: the next allocation takes it first
                    to_head(block, last=False)

    def evict_first(self, key: int) -> int:
        """Move the free blocks cached under ``key`` to the queue head, so the next
        allocation takes them before any older cached block (a policy's order, never
        vLLM's: `kvledger.blocks.eviction`); returns how many moved."""
        queue, moved = self.free_queue, 0
        for block in self.hash_map.blocks(key):
            if self.ref_cnt[block] == 0:
                queue.move_to_end(block, last=False)
                moved += 1
        return moved

    def usage(self) -> PoolUsage:
        cached = sum(1 for b in self.free_queue if self.block_key[b] is not None)
        return PoolUsage(free_blocks=len(self.free_queue) - cached, cached_blocks=cached,
                         held_blocks=self.num_blocks - 1 - len(self.free_queue))

    def num_hashed_blocks(self) -> int:
        return len(self.hash_map)

    def check_integrity(self) -> None:
        """Conservation and consistency; raises RuntimeError naming the broken rule."""
        ref, keys, queue = self.ref_cnt, self.block_key, self.free_queue
        if NULL_BLOCK in queue or ref[NULL_BLOCK] or keys[NULL_BLOCK] is not None:
            raise RuntimeError("block pool: the null block is queued, referenced or hashed")
        held = sum(1 for r in ref if r > 0)
        if any(r < 0 for r in ref):
            raise RuntimeError("block pool: a negative ref count")
        for block in queue:
            if ref[block]:
                raise RuntimeError(f"block pool: block {block} is queued with ref {ref[block]}")
        use = self.usage()
        if use.free_blocks + use.cached_blocks + use.held_blocks != self.num_blocks - 1 or \
                held != use.held_blocks:
            raise RuntimeError(f"block pool: {use} does not add up to {self.num_blocks - 1} "
                               "blocks (a block leaked or is in two states)")
        self.hash_map.check_integrity()
        mapped = 0
        for key, block in self.hash_map.items():
            mapped += 1
            if keys[block] != key:
                raise RuntimeError(f"block pool: block {block} is mapped under {key} but "
                                   f"carries {keys[block]}")
        if mapped != sum(1 for k in keys if k is not None):
            raise RuntimeError("block pool: a hashed block is missing from the hash map")
