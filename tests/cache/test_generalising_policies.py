"""Segment-branch admission, spent-first and hit-density eviction, the host split: each
decision exact on hand-made trees, tickets and traces; and one replay where they change
what is reused."""

from __future__ import annotations

import numpy as np
import pytest

from cache.test_policies import states, ticket_for, tree_with
from kvledger.bound.split import choose_state_share, kept_pages, reuse_distances
from kvledger.bound.trace import BoundTrace
from kvledger.cache.policies import CheckpointEvent, StateAdmission, StateEviction
from kvledger.cache.policies.density import HitDensity
from kvledger.cache.policies.eviction import LruEviction
from kvledger.cache.policies.ghost import prefix_hashes
from kvledger.cache.policies.segment import SegmentBranchAdmission
from kvledger.cache.policies.spent import SpentFirst
from kvledger.tree.node import Tier

CHUNK, PREFILL, FINISH = (CheckpointEvent.CHUNK_END, CheckpointEvent.PREFILL_END,
                          CheckpointEvent.FINISH)


# ---- segment-branch admission --------------------------------------------------------------

def test_segment_is_the_coarsest_granularity_the_branch_depths_agree_on():
    policy = SegmentBranchAdmission(64, min_votes=4, agreement=0.75)
    for depth in (8, 16, 24, 12):  # 3 of 4 divisible by 8, all by 4
        policy.vote(depth, grid_pages=1)
    assert policy.divides[:5] == [4, 4, 4, 3, 1]
    assert policy.segment_pages(grid_pages=1) == 8  # 3/4 ≥ 0.75
    policy.vote(6, grid_pages=1)  # now 3/5 for 8, 4/5 for 4, 5/5 for 2
    assert policy.segment_pages(grid_pages=1) == 4
    assert SegmentBranchAdmission(64).segment_pages(grid_pages=2) == 2  # no votes: the grid


def test_segment_branch_tracks_the_ghost_branch_then_the_segment_end():
    policy = SegmentBranchAdmission(64, min_votes=1)
    first = ticket_for(policy, list(range(20)), prompt_pages=19)
    assert (first.branch_pages, first.then_pages, first.segment_pages) == (19, None, 19)
    # the second prompt shares 8 pages: one vote for 8 (and 4, 2, 1); segment = 8 pages
    second = ticket_for(policy, list(range(8)) + list(range(100, 112)), prompt_pages=19)
    assert policy.segment_pages(grid_pages=1) == 8
    assert (second.seen_pages, second.branch_pages, second.then_pages) == (8, 8, 16)
    assert [policy.admit(CHUNK, second, p) for p in (8, 16, 12)] == [True, True, False]
    assert policy.admit(PREFILL, second, 16)
    # a usable hit at the branch point already: only the segment end is left to track
    third = ticket_for(policy, list(range(8)) + list(range(200, 212)), prompt_pages=19,
                       usable=8)
    assert (third.branch_pages, third.then_pages) == (16, None)
    policy.check_integrity()


def test_segment_branch_finish_states_follow_ghost_branch():
    policy = SegmentBranchAdmission(64, window=2, finish_reuse_rate=1.0)
    t = ticket_for(policy, [1, 2, 3], prompt_pages=3)
    assert [policy.admit(FINISH, t, 2) for _ in range(3)] == [True, True, False]


def test_the_cache_saves_both_points_one_per_chunk():
    from cache.cache_factories import PAGE, Keys, real_cache
    from kvledger.cache.policies import build_policies
    cache = real_cache(num_pages=12, policies=build_policies(
        StateAdmission.SEGMENT_BRANCH, StateEviction.LRU, flops_of=float, slot_bytes=1,
        page_bytes=1, num_slots=12))
    keys = Keys(cache)
    seq = cache.admit(keys(np.arange(5 * PAGE)), prompt_tokens=5 * PAGE, final_tokens=5 * PAGE)
    seq.branch_tokens, seq.then_branch_tokens = PAGE, 3 * PAGE
    assert [at for at, _ in cache.extend(seq, 2 * PAGE).checkpoints] == [PAGE]
    cache.commit(seq, keys(np.arange(5 * PAGE)), 2 * PAGE, cache_unfinished=False)
    assert [at for at, _ in cache.extend(seq, 2 * PAGE).checkpoints] == [3 * PAGE]
    # both in one chunk: the deeper one
    seq2 = cache.admit(keys(np.arange(100, 100 + 5 * PAGE)), prompt_tokens=5 * PAGE,
                       final_tokens=5 * PAGE)
    seq2.branch_tokens, seq2.then_branch_tokens = PAGE, 3 * PAGE
    assert [at for at, _ in cache.extend(seq2, 4 * PAGE).checkpoints] == [3 * PAGE]
    assert seq2.branch_tokens is None and seq2.then_branch_tokens is None


# ---- spent-first eviction ------------------------------------------------------------------

def test_spent_first_takes_consumed_chain_states_first_and_spares_junctions():
    tree = tree_with([1, 2], [1, 2, 3], [1, 2, 4], [7, 8], [9])
    book = tree.books[Tier.DEVICE]
    policy = SpentFirst(LruEviction(), capacity=16)
    lru = [n.mamba.value for n in states(tree).oldest(5, book.state_unlocked)]
    assert lru == [0, 1, 2, 3, 4]
    # requests resumed from [1, 2] (a junction) and from [7, 8] (a chain state)
    policy.observe(prefix_hashes(np.array([1, 2, 5])), prompt_pages=3, usable_pages=2)
    policy.observe(prefix_hashes(np.array([7, 8, 5])), prompt_pages=3, usable_pages=2)
    picked = policy.pick(Tier.DEVICE, states(tree), 2, book.state_unlocked)
    assert [n.mamba.value for n in picked] == [3, 0]  # [7, 8] spent; then LRU: the junction
    assert policy.spent_picks == 1
    assert policy.pick(Tier.DEVICE, states(tree), 0, book.state_unlocked) == []
    policy.check_integrity()


def test_spent_first_without_consumption_is_its_base():
    tree = tree_with([1], [2], [3])
    book = tree.books[Tier.DEVICE]
    policy = SpentFirst(LruEviction(), capacity=4)
    assert policy.pick(Tier.DEVICE, states(tree), 2, book.state_unlocked) == \
        states(tree).oldest(2, book.state_unlocked)
    assert policy.name == "spent-first"


# ---- hit-density eviction ------------------------------------------------------------------

def test_hit_density_is_reuses_per_slot_time_at_an_age():
    d = HitDensity()
    assert d.density_of(5) == 0.0  # no evidence
    d.hits[3], d.evictions[1] = 10.0, 10.0  # reuses at ages 4..7, evictions at age 1
    # age 0: 10 reuses over 10·(1+1) + 10·(5.5+1) slot-requests = 85
    assert d.density_of(0) == pytest.approx(10 / 85)
    assert d.density_of(4) == pytest.approx(10 / (10 * 2.5))
    assert d.density_of(9) == 0.0  # past every reuse seen


def test_hit_density_evicts_the_young_when_reuse_comes_late():
    tree = tree_with([1], [2], [3])
    book = tree.books[Tier.DEVICE]
    d = HitDensity()
    d.hits[3] = 10.0  # reuses come at ages 4..7
    first = d.pick(Tier.DEVICE, states(tree), 1, book.state_unlocked)  # all born now: LRU
    assert [n.mamba.value for n in first] == [0]
    for _ in range(4):
        d.observe(None, 1, 0)
    # [2] and [3] are 4 requests old; a newcomer [5] has age 0 and goes first (LRU: last)
    tree.insert(np.array([5], dtype=np.int64), np.arange(50, 51), 9)
    rest = lambda n: n.mamba.value != 0 and book.state_unlocked(n)  # noqa: E731 (0 went)
    victim = d.pick(Tier.DEVICE, states(tree), 1, rest)
    assert [n.mamba.value for n in victim] == [9]
    assert states(tree).oldest(1, rest)[0].mamba.value == 1  # what LRU would have taken
    assert d.evictions[0] == 2
    assert d.pick(Tier.HOST, states(tree), 1, rest) == states(tree).oldest(1, rest)  # host: LRU
    d.check_integrity()


def test_hit_density_counts_a_reuse_at_its_age_and_restarts_it():
    tree = tree_with([1, 2])
    book = tree.books[Tier.DEVICE]
    d = HitDensity(decay_every=1 << 20)
    d.pick(Tier.DEVICE, states(tree), 1, book.state_unlocked)  # born at 0, evicted at 0
    assert d.evictions[0] == 1
    node = states(tree).oldest(1, book.state_unlocked)[0]
    assert d._born(node) == 0  # reborn (the tree still holds it in this test)
    for _ in range(3):
        d.observe(None, 2, 0)
    d.observe(prefix_hashes(np.array([1, 2, 3])), prompt_pages=3, usable_pages=2)
    assert d.hits.tolist()[:4] == [0.0, 0.0, 0.0, 1.0]  # age 4: bin 3 (ages 4..7)
    assert d._born(node) == 4  # a reused state's age restarts


def test_hit_density_counts_halve_every_decay_period():
    d = HitDensity(decay_every=2)
    d.hits[2] = 8.0
    d.observe(None, 1, 0)
    d.observe(None, 1, 0)
    assert d.hits[2] == 4.0


# ---- the host split ------------------------------------------------------------------------

def test_reuse_distances_count_pages_and_waiting_states_in_between():
    t = BoundTrace.of_paths([[1, 2, 3, 4], [5, 6, 7, 8], [1, 2, 3, 9], [5, 6, 7, 9]],
                            [4, 4, 4, 4])
    r = reuse_distances(t)
    assert (r.distances, r.pages_between, r.states_between, r.reused_pages) == \
        ((2, 2), (4, 1), (1, 1), (3, 3))
    assert kept_pages(r, pages=4, slots=1) == 6
    assert kept_pages(r, pages=3, slots=1) == 3  # request 2's reuse needs 4 pages in between
    assert kept_pages(r, pages=4, slots=0.5) == 0  # each needs room for 1 waiting state


def test_choose_state_share_picks_the_smallest_share_that_keeps_the_most():
    t = BoundTrace.of_paths([[1, 2, 3, 4], [5, 6, 7, 8], [1, 2, 3, 9], [5, 6, 7, 9]],
                            [4, 4, 4, 4])
    r = reuse_distances(t)
    kw = {"page_bytes": 1, "slot_bytes": 4, "device_pages": 0, "device_slots": 0}
    assert choose_state_share(r, budget_bytes=10, shares=(0.2, 0.5, 0.8), **kw) == 0.5
    assert choose_state_share(r, budget_bytes=20, shares=(0.2, 0.5, 0.8), **kw) == 0.2
    with pytest.raises(ValueError, match="expected positive"):
        choose_state_share(r, budget_bytes=0, **kw)


def test_segment_ends_count_one_reuse_each_and_switch_off_when_rare():
    policy = SegmentBranchAdmission(256, window=4, segment_reuse_rate=0.5, min_votes=1000)
    ticket_for(policy, [1, 2, 3, 4], prompt_pages=4)  # segment end: pages 1-4
    for tail in (5, 6, 7):  # three prompts extend the same end: one reuse, not three
        ticket_for(policy, [1, 2, 3, 4, tail], prompt_pages=5)
    assert (policy.segments, policy.segment_reused) == (4 / 1, 0.5)  # halved at 4 ends
    assert policy.segment_weight == 2.0 and not policy.segment_ends_pay
    off = ticket_for(policy, [9, 8, 7], prompt_pages=3)
    assert (off.segment_pages, off.then_pages) == (None, None)  # ghost-branch's ticket
