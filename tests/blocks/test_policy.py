"""State policies on vLLM's block cache (`kvledger.blocks.policy`): vLLM's rule is the
default and changes nothing; each kvledger rule gives the hits worked out by hand below on
small traces; and under every rule the pool keeps its integrity after every step."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvledger.blocks import FullAttentionSpec, MambaAlignSpec
from kvledger.blocks.admission import GhostJunction
from kvledger.blocks.eviction import DeadFirst
from kvledger.blocks.policy import BlockEviction, BlockPolicy, StateAdmission
from kvledger.blocks.pool import BlockPool
from kvledger.sim.vllm_serving import VllmServeConfig, _Loop, vllm_serve
from kvledger.sim.workload import Request

B = 64
POLICIES = [BlockPolicy(a, e) for a in StateAdmission for e in BlockEviction]


def _groups(retention: int | None = 0):
    return (MambaAlignSpec(block_size_tokens=B, retention_interval_tokens=retention),
            FullAttentionSpec(block_size_tokens=B))


def _hits(requests, policy: BlockPolicy, num_blocks: int = 256) -> list[int]:
    out = vllm_serve(requests, VllmServeConfig(groups=_groups(), num_blocks=num_blocks,
                                               policy=policy))
    return [r.hit_tokens for r in sorted(out.records, key=lambda r: r.rid)]


def _req(rid: int, t_ms: float, ids: tuple[int, ...], tokens: tuple[int, ...]) -> Request:
    return Request(rid=rid, arrival_ms=t_ms, segment_ids=ids, segment_tokens=tokens,
                   output_tokens=1)


# Three turns of one conversation, each arriving after the last finished: turn 0 is 812
# tokens, turns 1 and 2 extend it. vLLM caches turn 0's state at c = ⌊811/64⌋·64 = 768 and
# turn 1 resumes there. Junction-only keeps no state at a prompt's own end: turn 1 reaches
# 768 tokens of KV without a state (the junction), stops there and caches it; turn 2 hits.
TURNS = [_req(0, 0.0, (1, 2), (512, 300)), _req(1, 1e6, (1, 2, 5), (512, 300, 100)),
         _req(2, 2e6, (1, 2, 6), (512, 300, 100))]


def test_vllm_rule_resumes_each_turn_at_the_last_turns_replay_boundary():
    assert _hits(TURNS, BlockPolicy()) == [0, 768, 768]


def test_junction_only_loses_the_first_follow_up():
    assert _hits(TURNS, BlockPolicy(StateAdmission.JUNCTION_ONLY)) == [0, 0, 768]


# Two requests sharing a 512-token prefix arrive together and are admitted in one step, so
# neither sees the other's blocks cached: vLLM finds no junction. Request 2 then reaches 512
# tokens of KV with no state there (both cached theirs at 768, on different content), stops
# at the junction and caches it; request 3 hits 512. The ghost table has seen request 0's
# hashes when request 1 is admitted: request 1 stops at 512 already, and request 2 hits.
SHARED = [_req(0, 0.0, (1, 2), (512, 300)), _req(1, 0.0, (1, 3), (512, 300)),
          _req(2, 1e6, (1, 4), (512, 300)), _req(3, 2e6, (1, 5), (512, 300))]


def test_vllm_rule_finds_the_junction_only_in_cached_kv():
    assert _hits(SHARED, BlockPolicy()) == [0, 0, 0, 512]


def test_ghost_junction_finds_the_junction_of_requests_admitted_together():
    assert _hits(SHARED, BlockPolicy(StateAdmission.GHOST_JUNCTION)) == [0, 0, 512, 512]


def test_ghost_table_forgets_the_least_recent_hashes_beyond_its_capacity():
    from kvledger.blocks.coordinator import CacheHit

    g = GhostJunction(capacity_blocks=2)
    miss = CacheHit(hit_tokens=0, attention_hit_tokens=0, attention_blocks=())
    g.boundaries([1, 2, 3], 4 * B, miss, block_size_tokens=B)  # remembers 2 and 3 only
    # block 1 is forgotten, so no prefix of [1, 2, 9] was seen
    assert g.boundaries([1, 2, 9], 4 * B, miss, block_size_tokens=B).junction_tokens == 0
    g.check_integrity()


def test_dead_first_buries_the_states_and_longer_prefixes_behind_an_evicted_block():
    # chain 1 → 2 → 3 (attention group 0) with a state at 3 (group 1), and a sibling
    # branch 1 → 4; evicting block 1 leaves all of them unreachable
    pool = BlockPool(num_blocks=10, num_groups=2)
    rule = DeadFirst(attention_group=0, mamba_groups=(1,))
    pool.on_evict = lambda key: rule.on_evicted(pool, key)
    a1, a2, a3, a4, s3, keep = pool.get_new_blocks(6)
    for block, h in ((a1, 1), (a2, 2), (a3, 3), (a4, 4), (keep, 7)):
        pool.cache_block(block, block_hash=h, group=0)
    pool.cache_block(s3, block_hash=3, group=1)
    for prompt in ([1, 2, 3], [1, 4], [7]):
        rule.on_cached(prompt)
    pool.free_blocks([a1, keep, a2, a3, s3, a4])  # a1 oldest: evicted first
    pool.get_new_blocks(4)  # the 3 never-used blocks, then a1
    assert rule.dead_blocks == 4
    head = list(pool.free_queue)[:4]
    assert sorted(head) == sorted([a2, a3, s3, a4]) and list(pool.free_queue)[4] == keep
    pool.check_integrity()


def test_dead_first_leaves_a_key_another_block_still_holds():
    pool = BlockPool(num_blocks=6, num_groups=2)
    rule = DeadFirst(attention_group=0, mamba_groups=(1,))
    pool.on_evict = lambda key: rule.on_evicted(pool, key)
    old, new, child = pool.get_new_blocks(3)
    pool.cache_block(old, block_hash=1, group=0)
    pool.cache_block(new, block_hash=1, group=0)  # a recomputed copy of the same prefix
    pool.cache_block(child, block_hash=2, group=0)
    rule.on_cached([1, 2])
    pool.free_blocks([old, new, child])
    pool.get_new_blocks(3)  # two free blocks, then `old`: `new` still names the prefix
    assert rule.dead_blocks == 0 and pool.get_cached(2, 0) == child


def test_the_policy_label_names_both_rules():
    assert BlockPolicy().label == "vllm + lru" and BlockPolicy().is_vllm
    assert not BlockPolicy(eviction=BlockEviction.DEAD_FIRST).is_vllm


@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: p.label)
@settings(max_examples=15, deadline=None, derandomize=True, database=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2), st.integers(1, 511),
                          st.integers(1, 20), st.integers(0, 50)), min_size=1, max_size=10),
       st.integers(64, 700), st.sampled_from([0, None, 2 * B]))
def test_integrity_holds_after_every_step_under_every_policy(policy, shape, budget, retention):
    requests = [Request(rid=i, arrival_ms=float(t), segment_ids=(a, 5 + b, 10 + i),
                        segment_tokens=(256, 128, tail), output_tokens=out)
                for i, (a, b, tail, out, t) in enumerate(shape)]
    loop = _Loop(requests, VllmServeConfig(groups=_groups(retention), num_blocks=40,
                                           max_num_batched_tokens=budget, max_num_seqs=3,
                                           policy=policy))
    schedule = loop._schedule

    def checked():
        scheduled = schedule()
        loop.coord.check_integrity()
        return scheduled

    loop._schedule = checked
    out = loop.run()
    assert sorted([r.rid for r in out.records] + list(out.unfinished)) == list(range(len(shape)))
    assert loop.coord.pool.usage().held_blocks == 0
    loop.coord.check_integrity()
    for r in out.records:
        assert r.hit_tokens % B == 0 and r.hit_tokens <= r.attention_hit_tokens < r.prompt_tokens
