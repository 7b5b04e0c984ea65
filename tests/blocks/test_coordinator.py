"""The coordinator over one pool: the hybrid lookup (`HybridKVCacheCoordinator.
find_longest_cache_hit`, `MambaManager.find_longest_cache_hit`), align-mode state blocks
(`MambaManager.allocate_new_blocks`, `reachable_block_mask`) and check-then-commit allocation,
with a Hypothesis state machine that runs random prompts and checks integrity every step.

Rules under test are the README's of `oracle/vllm-0.33-prefix-cache/` (section 3)."""

from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from kvledger.blocks import Coordinator, FullAttentionSpec, MambaAlignSpec
from kvledger.blocks.pool import NULL_BLOCK, PoolError

B = 4


def _hybrid(num_blocks: int = 64, **mamba) -> Coordinator:
    return Coordinator((MambaAlignSpec(block_size_tokens=B, **mamba),
                        FullAttentionSpec(block_size_tokens=B)), num_blocks=num_blocks)


def _run(coord: Coordinator, rid: int, hashes: list[int], length: int,
         ends: list[int] | None = None) -> int:
    """One prompt in the given chunk ends (default one chunk); returns the hit."""
    hit = coord.find_longest_cache_hit(hashes, length)
    junction = hit.attention_hit_tokens if hit.attention_hit_tokens > hit.hit_tokens else 0
    boundaries = {(length - 1) // B * B, junction}
    for k, end in enumerate(ends or [length]):
        coord.allocate_slots(rid, hit if k == 0 else None, end_tokens=end,
                             boundaries=boundaries)
        coord.cache_blocks(rid, hashes, end, boundaries)
    coord.free(rid)
    coord.check_integrity()
    return hit.hit_tokens


def test_full_only_resend_hits_all_but_the_block_holding_the_last_token():
    coord = Coordinator((FullAttentionSpec(block_size_tokens=B),), num_blocks=16)
    assert _run(coord, 0, [1, 2, 3], 12) == 0
    assert _run(coord, 1, [1, 2, 3], 12) == 8  # capped at L − 1 = 11: two whole blocks
    assert _run(coord, 2, [1, 2, 3], 13) == 12
    assert _run(coord, 3, [], 3) == 0  # L <= B: nothing to hit


def test_hybrid_resend_hits_the_replay_boundary_state():
    coord = _hybrid()
    assert _run(coord, 0, [1, 2, 3], 14) == 0  # c = 12: the prefill checkpoint block
    mamba = coord.mamba
    assert mamba.checkpoint_blocks == 1
    assert _run(coord, 1, [1, 2, 3], 14) == 12
    assert _run(coord, 2, [1, 2], 10) == 0  # attention reaches 8, but no state ends there


def test_the_state_at_the_prompt_end_is_not_cached_unless_dense():
    default, dense = _hybrid(), _hybrid(retention_interval_tokens=None)
    for coord in (default, dense):
        _run(coord, 0, [1, 2, 3], 12)  # L % B == 0: c = 8, the running state ends at 12
    assert _run(default, 1, [1, 2, 3, 4], 16) == 8
    assert _run(dense, 1, [1, 2, 3, 4], 16) == 12


def test_a_junction_chunk_caches_the_state_at_the_attention_reach():
    coord = _hybrid()
    _run(coord, 0, [1, 2, 3], 14)  # states at 12 only
    hashes = [1, 2, 7, 8]
    hit = coord.find_longest_cache_hit(hashes, 18)
    assert (hit.hit_tokens, hit.attention_hit_tokens) == (0, 8)
    assert _run(coord, 1, hashes, 18, ends=[8, 18]) == 0
    assert _run(coord, 2, [1, 2, 9], 13) == 8  # the junction state at 8


def test_state_positions_hold_nulls_between_the_hit_and_the_new_states():
    coord = _hybrid()
    _run(coord, 0, [1, 2, 3], 14)
    hit = coord.find_longest_cache_hit([1, 2, 3, 4, 5], 22)
    coord.allocate_slots(9, hit, end_tokens=22, boundaries={20})
    table = coord.mamba.req_to_blocks[9]
    # hit state at position 2 (12 tokens), checkpoint at 4 (20), running state at 5 (22)
    assert [b != NULL_BLOCK for b in table] == [False, False, True, False, True, True]
    coord.free(9)
    coord.check_integrity()


def test_an_allocation_that_does_not_fit_is_refused_before_touching_anything():
    coord = _hybrid(num_blocks=6)
    _run(coord, 0, [1], 5)  # 2 attention blocks, the checkpoint at 4 and the running state
    before = list(coord.pool.free_queue)
    with pytest.raises(PoolError, match="needs 7 blocks, 5 are free or evictable"):
        coord.allocate_slots(1, coord.find_longest_cache_hit([1, 2, 3], 14), end_tokens=14,
                             boundaries={12})
    # 2 hit blocks to touch (attention block 0, the state at 4), 3 attention and 2 state
    # blocks to allocate; nothing changed
    assert list(coord.pool.free_queue) == before and not coord.mamba.req_to_blocks
    coord.check_integrity()


def test_groups_need_one_block_size():
    with pytest.raises(ValueError, match="one block size"):
        Coordinator((MambaAlignSpec(block_size_tokens=8), FullAttentionSpec(block_size_tokens=4)),
                    num_blocks=8)


class CoordinatorMachine(RuleBasedStateMachine):
    """Random prompts over a small shared pool; between rules nothing is held."""

    def __init__(self) -> None:
        super().__init__()
        self.coord = _hybrid(num_blocks=24)
        self.rid = 0

    @rule(contents=st.lists(st.integers(1, 3), min_size=0, max_size=5),
          tail=st.integers(0, B - 1), split=st.booleans())
    def prompt(self, contents, tail, split):
        length = len(contents) * B + tail  # a partial last block of `tail` tokens, if any
        if length == 0:
            return
        hashes = self.coord_hashes(contents)
        hit = self.coord.find_longest_cache_hit(hashes, length)
        assert hit.hit_tokens <= hit.attention_hit_tokens <= max(0, length - 1)
        assert hit.hit_tokens % B == 0
        ends = [length]
        if split and hit.attention_hit_tokens > hit.hit_tokens:
            ends = [hit.attention_hit_tokens, length]
        try:
            _run(self.coord, self.rid, hashes, length, ends)
        except PoolError:
            self.coord.free(self.rid)  # a refused request hands back what it held
        self.rid += 1

    @staticmethod
    def coord_hashes(contents: list[int]) -> list[int]:
        out, parent = [], 0
        for c in contents:  # a chain: equal exactly when the whole prefix is
            parent = parent * 4 + c
            out.append(parent)
        return out

    @invariant()
    def conserved(self):
        self.coord.check_integrity()
        assert self.coord.pool.usage().held_blocks == 0


CoordinatorMachine.TestCase.settings = settings(max_examples=40, stateful_step_count=20,
                                                deadline=None, derandomize=True, database=None)
TestCoordinatorMachine = CoordinatorMachine.TestCase


def test_integrity_names_a_reference_no_table_holds():
    coord = _hybrid()
    _run(coord, 0, [1, 2, 3], 14)
    (block,) = coord.find_longest_cache_hit([1, 2, 3], 14).state_blocks
    coord.pool.touch([block])  # a reference outside every table
    with pytest.raises(RuntimeError, match=f"block {block} has ref_cnt 1 but 0 table"):
        coord.check_integrity()


def test_with_two_mamba_groups_a_state_costs_two_blocks_and_is_lost_with_either():
    spec = MambaAlignSpec(block_size_tokens=B)
    coord = Coordinator((spec, spec, FullAttentionSpec(block_size_tokens=B)), num_blocks=64)
    _run(coord, 0, [1, 2, 3], 14)  # the checkpoint at 12, in both Mamba groups
    hit = coord.find_longest_cache_hit([1, 2, 3], 14)
    assert hit.hit_tokens == 12 and len(set(hit.state_blocks)) == 2
    second = coord.mambas[1]
    pool = coord.pool
    pool.free_queue.move_to_end(hit.state_blocks[1], last=False)  # next in line for eviction
    pool.get_new_blocks(1)
    assert pool.evicted_blocks[second.group] == 1  # group 0 still holds its half
    assert coord.find_longest_cache_hit([1, 2, 3], 14).hit_tokens == 0
