"""The shared BlockPool: vLLM 0.33's free-queue order, lazy eviction and hash map
(`vllm/v1/core/block_pool.py`: `BlockPool.get_new_blocks`, `free_blocks`, `touch`,
`cache_full_blocks`, `BlockHashToBlockMap`), and a Hypothesis state machine that holds it to
a plain-list model with `check_integrity()` after every step."""

from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kvledger.blocks import NULL_BLOCK, BlockPool, PoolUsage
from kvledger.blocks.pool import PoolError


def test_the_null_block_is_never_handed_out_and_blocks_leave_in_id_order():
    pool = BlockPool(num_blocks=5, num_groups=1)
    assert pool.get_new_blocks(4) == [1, 2, 3, 4]
    assert NULL_BLOCK not in pool.free_queue and pool.num_free_blocks == 0
    pool.check_integrity()


def test_hashed_blocks_go_to_the_tail_unhashed_to_the_head_and_eviction_is_lazy():
    pool = BlockPool(num_blocks=5, num_groups=1)
    a, b, c = pool.get_new_blocks(3)
    pool.cache_block(a, block_hash=10, group=0)
    pool.cache_block(c, block_hash=30, group=0)
    pool.free_blocks([c, b, a])  # a table freed in reverse, as SingleTypeKVCacheManager.free
    assert list(pool.free_queue) == [b, 4, c, a]
    assert pool.usage() == PoolUsage(free_blocks=2, cached_blocks=2, held_blocks=0)
    assert pool.get_cached(30, 0) == c  # still a hit: nothing is evicted before it is popped
    assert pool.get_new_blocks(3) == [b, 4, c]
    assert pool.get_cached(30, 0) is None and pool.get_cached(10, 0) == a
    assert pool.evicted_blocks == [1]
    pool.check_integrity()


def test_touch_takes_a_cached_block_out_of_the_queue_and_counts_references():
    pool = BlockPool(num_blocks=3, num_groups=2)
    (a,) = pool.get_new_blocks(1)
    pool.cache_block(a, block_hash=7, group=1)
    pool.free_blocks([a])
    assert pool.get_cached(7, 0) is None and pool.get_cached(7, 1) == a  # per-group keys
    pool.touch([a, NULL_BLOCK])
    pool.touch([a])
    assert pool.ref_cnt[a] == 2 and a not in pool.free_queue
    pool.free_blocks([a, a])
    assert list(pool.free_queue) == [2, a]
    with pytest.raises(RuntimeError, match="freed with ref_cnt 0"):
        pool.free_blocks([a])


def test_one_hash_may_name_two_blocks_and_a_hit_takes_the_older():
    pool = BlockPool(num_blocks=4, num_groups=1)
    a, b = pool.get_new_blocks(2)
    pool.cache_block(a, block_hash=5, group=0)
    pool.cache_block(b, block_hash=5, group=0)
    pool.free_blocks([a, b])
    assert pool.get_cached(5, 0) == a
    pool.get_new_blocks(2)  # block 3, then a (its hash dropped)
    assert pool.get_cached(5, 0) == b and pool.num_hashed_blocks() == 1


def test_an_allocation_that_does_not_fit_changes_nothing():
    pool = BlockPool(num_blocks=3, num_groups=1)
    with pytest.raises(PoolError, match="need 3 blocks, 2 free"):
        pool.get_new_blocks(3)
    assert list(pool.free_queue) == [1, 2]
    with pytest.raises(RuntimeError, match="cannot be cached"):
        pool.cache_block(1, block_hash=1, group=0)  # not held


class PoolMachine(RuleBasedStateMachine):
    """The pool against a model: a list for the free queue, dicts for refs and hashes."""

    NUM_BLOCKS = 9

    def __init__(self) -> None:
        super().__init__()
        self.pool = BlockPool(num_blocks=self.NUM_BLOCKS, num_groups=2)
        self.queue = list(range(1, self.NUM_BLOCKS))
        self.refs = {b: 0 for b in self.queue}
        self.key: dict[int, int] = {}
        self.by_key: dict[int, list[int]] = {}

    def _drop_key(self, block: int) -> None:
        key = self.key.pop(block, None)
        if key is not None:
            self.by_key[key].remove(block)

    @rule(n=st.integers(0, 10))
    def allocate(self, n):
        if n > len(self.queue):
            with pytest.raises(PoolError):
                self.pool.get_new_blocks(n)
            return
        got = self.pool.get_new_blocks(n)
        expected, self.queue = self.queue[:n], self.queue[n:]
        assert got == expected
        for block in got:
            self._drop_key(block)
            self.refs[block] = 1

    @precondition(lambda self: any(r and b not in self.key for b, r in self.refs.items()))
    @rule(data=st.data(), block_hash=st.integers(0, 3), group=st.integers(0, 1))
    def cache(self, data, block_hash, group):
        block = data.draw(st.sampled_from(sorted(
            b for b, r in self.refs.items() if r and b not in self.key)))
        self.pool.cache_block(block, block_hash=block_hash, group=group)
        key = block_hash * 2 + group
        self.key[block] = key
        self.by_key.setdefault(key, []).append(block)

    @rule(block_hash=st.integers(0, 3), group=st.integers(0, 1))
    def touch_a_hit(self, block_hash, group):
        found = self.pool.get_cached(block_hash, group)
        blocks = self.by_key.get(block_hash * 2 + group) or [None]
        assert found == blocks[0]
        if found is None:
            return
        self.pool.touch([found])
        if self.refs[found] == 0:
            self.queue.remove(found)
        self.refs[found] += 1

    @precondition(lambda self: any(self.refs.values()))
    @rule(data=st.data())
    def free_one(self, data):
        block = data.draw(st.sampled_from(sorted(b for b, r in self.refs.items() if r)))
        self.pool.free_blocks([block])
        self.refs[block] -= 1
        if self.refs[block] == 0:
            if block in self.key:
                self.queue.append(block)
            else:
                self.queue.insert(0, block)

    @invariant()
    def agrees_with_the_model(self):
        self.pool.check_integrity()
        assert list(self.pool.free_queue) == self.queue
        assert self.pool.ref_cnt[1:] == [self.refs[b] for b in range(1, self.NUM_BLOCKS)]
        use = self.pool.usage()
        assert use.cached_blocks == sum(1 for b in self.queue if b in self.key)
        assert use.free_blocks + use.cached_blocks + use.held_blocks == self.NUM_BLOCKS - 1


PoolMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=30,
                                         deadline=None, derandomize=True, database=None)
TestPoolMachine = PoolMachine.TestCase
