"""A Mamba group in align mode: vLLM's `MambaManager` (`single_type_kv_cache_manager.py`).

Block position ``p`` holds "the state after (p+1)·B tokens". A request holds at most two
real state blocks per chunk; every other position is the null block and is never cached
(`MambaManager.allocate_new_blocks`):

    positions   0 .. j−2     j−1        ...      c/B−1        ⌈end/B⌉−1
    blocks      null ...     hit state  null ... checkpoint   running state

- the hit state (the deepest cached state, found scanning down from the attention hit:
  `MambaManager.find_longest_cache_hit`);
- the running state at the chunk end, position ``⌈end/B⌉ − 1``;
- the prefill checkpoint at position ``⌈end/B⌉ − 2``, the block ending at
  ``⌊(end−1)/B⌋·B`` (`get_mamba_prefill_checkpoint_position`), when the chunk starts
  before it, the backend exports a mid-chunk state (``num_prefill_checkpoint_blocks`` 1)
  and the state there may be cached: on the prompt's last chunk that is ``c = ⌊(L−1)/B⌋·B``,
  always a reachable boundary; on a chunk that stops at the junction only a dense (or
  matching retention) spec keeps it. The oracle's ``+dense`` cells count one more
  checkpoint step per junction request than the default ones, which is this rule.

Which of them get a hash is `MambaAlignSpec.reachable` (`MambaManager.reachable_block_mask`).
`remove_skipped_blocks` frees states the request has moved past: a Mamba layer needs only
the state at ``computed − 1`` (`MambaManager.get_num_skipped_tokens`).

>>> from kvledger.blocks.pool import BlockPool
>>> from kvledger.blocks.specs import MambaAlignSpec
>>> pool = BlockPool(num_blocks=8, num_groups=1)
>>> m = MambaManager(pool, group=0, spec=MambaAlignSpec(block_size_tokens=4))
>>> m.allocate(0, end_tokens=10, boundaries={8})  # c = 8: checkpoint at 1, running at 2
>>> [b != 0 for b in m.req_to_blocks[0]], m.cache(0, [5, 6], 10, {8})
([False, True, True], 1)
"""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet

from kvledger.blocks.manager import GroupManager
from kvledger.blocks.pool import NULL_BLOCK, BlockPool
from kvledger.blocks.specs import MambaAlignSpec


class MambaManager(GroupManager):

    def __init__(self, pool: BlockPool, group: int, spec: MambaAlignSpec) -> None:
        super().__init__(pool, group, spec.block_size_tokens)
        self.spec = spec
        self.checkpoint_blocks = 0  # chunks that allocated a prefill checkpoint block

    def add_hit(self, rid: int, num_blocks: int, state_block: int) -> None:
        """Only the state block is touched: the positions before it are skipped (a Mamba
        layer needs the state at ``h`` alone, `get_num_skipped_tokens`)."""
        table = self.req_to_blocks[rid] = [NULL_BLOCK] * num_blocks
        if num_blocks:
            self.pool.touch([state_block])
            table[-1] = state_block
        self.num_cached_block[rid] = num_blocks

    def _positions(self, start: int, end_tokens: int, boundaries: AbstractSet[int]) -> list[int]:
        running = -(-end_tokens // self.block_size_tokens) - 1
        if running < start:
            return []
        checkpoint = running - 1  # the block ending at ⌊(end−1)/B⌋·B
        if (self.spec.num_prefill_checkpoint_blocks and start <= checkpoint
                and self.spec.reachable((checkpoint + 1) * self.block_size_tokens, boundaries)):
            return [checkpoint, running]
        return [running]

    def num_new_blocks(self, num_held_blocks: int, end_tokens: int,
                       boundaries: AbstractSet[int]) -> int:
        """Blocks to allocate for a table of ``num_held_blocks`` positions to reach
        ``end_tokens`` (`MambaManager.get_num_blocks_to_allocate`)."""
        return len(self._positions(num_held_blocks, end_tokens, boundaries))

    def allocate(self, rid: int, *, end_tokens: int, boundaries: AbstractSet[int]) -> None:
        table = self.blocks(rid)
        positions = self._positions(len(table), end_tokens, boundaries)
        if not positions:
            return
        fresh = self.pool.get_new_blocks(len(positions))
        table.extend([NULL_BLOCK] * (positions[-1] + 1 - len(table)))
        for position, block in zip(positions, fresh, strict=True):
            table[position] = block
        self.checkpoint_blocks += len(positions) == 2

    def cache(self, rid: int, block_hashes: list[int], num_tokens: int,
              boundaries: AbstractSet[int]) -> int:
        size, spec = self.block_size_tokens, self.spec
        return self._cache(rid, block_hashes, num_tokens,
                           lambda p: spec.reachable((p + 1) * size, boundaries))

    def remove_skipped_blocks(self, rid: int, computed_tokens: int) -> None:
        """Free the state blocks before position ``⌊(computed−1)/B⌋``."""
        table = self.req_to_blocks.get(rid)
        if not table or computed_tokens < 1:
            return
        skipped = min(len(table), (computed_tokens - 1) // self.block_size_tokens)
        gone = [table[p] for p in range(skipped - 1, -1, -1) if table[p] != NULL_BLOCK]
        for p in range(skipped):
            table[p] = NULL_BLOCK
        self.pool.free_blocks(gone)


def find_deepest_state(managers: Sequence[MambaManager], block_hashes: list[int],
                       max_blocks: int) -> tuple[int, tuple[int, ...]]:
    """(``j``, one state block per group): the deepest prefix of at most ``max_blocks``
    blocks whose state every Mamba group holds, scanning down from ``max_blocks``
    (`MambaManager.find_longest_cache_hit` over the type's group ids: `BlockPool.
    get_cached_block` answers only when every group has the hash); ``(0, ())`` if none.

    A state is usable only whole: with four Mamba groups (GLM-5.3-Flash's layout) a state
    costs four blocks, and losing any one of them to eviction loses the state.
    """
    pool = managers[0].pool
    for j in range(max_blocks, 0, -1):
        block_hash = block_hashes[j - 1]
        blocks = tuple(pool.get_cached(block_hash, m.group) for m in managers)
        if None not in blocks:
            return j, blocks
    return 0, ()
