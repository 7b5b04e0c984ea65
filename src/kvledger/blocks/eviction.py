"""Eviction order on vLLM's block cache: which cached blocks the pool drops first.

vLLM 0.33 evicts lazily from one LRU queue (`BlockPool.get_new_blocks` pops its head and
drops the popped block's hash, `_maybe_evict_cached_block`); a freed hashed block joins the
tail in the order `KVCacheManager.free` hands it over (groups in order, each table reversed,
`SingleTypeKVCacheManager.free`). A rule here only reorders the free queue, never what is
cached, so every hit it allows is one vLLM's cache could serve.

* `LruEviction` — vLLM's order.
* `DeadFirst` — when an eviction leaves cached blocks no lookup can reach, they go next,
  before any older cached block: losing the attention block of hash ``H`` cuts every hit at
  ``H`` (the attention hit is a run from the prompt start), so the state blocks under ``H``
  and every block of a longer prefix through ``H`` are unreachable; losing one Mamba
  group's block of a state loses the state (a hit needs it in every group,
  `find_deepest_state`), so its other groups' blocks are unreachable. They stay so until a
  later request recomputes the missing block. Where vLLM frees the attention group first
  (GLM-5.3-Flash), a request's deepest KV block is evicted before the state after it,
  which then holds its blocks unreachable until LRU reaches them.

The rule learns the prefix tree from the hashes it sees cached (`on_cached`: block ``p``'s
parent is block ``p − 1`` of the same prompt), so it needs nothing from the caller.

>>> from kvledger.blocks.pool import BlockPool
>>> pool = BlockPool(num_blocks=6, num_groups=2)  # group 0 attention, group 1 Mamba
>>> rule = DeadFirst(attention_group=0, mamba_groups=(1,))
>>> pool.on_evict = lambda key: rule.on_evicted(pool, key)
>>> a, b, s = pool.get_new_blocks(3)
>>> pool.cache_block(a, block_hash=1, group=0); pool.cache_block(b, block_hash=2, group=0)
>>> pool.cache_block(s, block_hash=2, group=1); rule.on_cached([1, 2])
>>> pool.free_blocks([a, b, s])  # LRU order: a, b, then the state s
>>> _ = pool.get_new_blocks(3)  # two free blocks, then a: b and s are unreachable now
>>> sorted(list(pool.free_queue)[:2]) == [b, s], rule.dead_blocks
(True, 2)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvledger.blocks.pool import BlockPool


class LruEviction:
    name = "lru"
    hooks = False  # whether the coordinator calls on_cached and on_evicted

    def on_cached(self, block_hashes: Sequence[int]) -> None:
        return None

    def on_evicted(self, pool: BlockPool, key: int) -> None:
        return None


class DeadFirst(LruEviction):
    name = "dead-first"
    hooks = True

    def __init__(self, *, attention_group: int, mamba_groups: Sequence[int]) -> None:
        self.attention_group = attention_group
        self.mamba_groups = tuple(mamba_groups)
        self.children: dict[int, set[int]] = {}  # block hash → the hashes that extend it
        self.dead_blocks = 0  # blocks moved to the queue head

    def on_cached(self, block_hashes: Sequence[int]) -> None:
        """Learn the parent → child edges of a prompt's cached blocks."""
        children = self.children
        for parent, child in zip(block_hashes, block_hashes[1:], strict=False):
            children.setdefault(parent, set()).add(child)

    def _bury(self, pool: BlockPool, block_hash: int, groups: Sequence[int]) -> None:
        n = pool.num_groups
        for group in groups:
            self.dead_blocks += pool.evict_first(block_hash * n + group)

    def on_evicted(self, pool: BlockPool, key: int) -> None:
        n = pool.num_groups
        block_hash, group = divmod(key, n)
        if pool.hash_map.get(key) is not None:
            return  # another block still holds this key: nothing became unreachable
        if group != self.attention_group:
            self._bury(pool, block_hash, [g for g in self.mamba_groups if g != group])
            return
        self._bury(pool, block_hash, self.mamba_groups)
        stack = list(self.children.get(block_hash, ()))
        every_group = range(n)
        while stack:
            child = stack.pop()
            # an uncached prefix cuts its own subtree, which was buried when it went
            if pool.hash_map.get(child * n + self.attention_group) is None:
                continue
            self._bury(pool, child, every_group)
            stack.extend(self.children.get(child, ()))
