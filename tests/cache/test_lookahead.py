"""Queue lookahead (`cache/policies/lookahead.py`): the waiting queue's prefixes, the
queue-aware eviction order (unused and shadowed states first, then the needed ones by pages
saved per queue distance)
and queue-branch tickets, each decision exact on hand-made trees and queues; and one serving
replay where reading the queue changes what is reused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cache.test_policies import states, ticket_for, tree_with
from kvledger.cache.policies import CheckpointEvent, StateAdmission, StateEviction
from kvledger.cache.policies.eviction import LruEviction
from kvledger.cache.policies.ghost import prefix_hashes
from kvledger.cache.policies.lookahead import (
    DISTANCE_POWER,
    QueueAware,
    QueueBranchAdmission,
    QueueLookahead,
)
from kvledger.tree.node import Tier


def _h(*keys):
    return prefix_hashes(np.array(keys, dtype=np.int64))


def test_lookahead_counts_each_queued_prompt_under_each_prefix():
    ahead = QueueLookahead()
    for prompt in ((1, 2, 3), (1, 2, 4), (1, 2, 3)):
        ahead.join(_h(*prompt))
    assert [ahead.users(int(h)) for h in _h(1, 2, 3)] == [3, 3, 2]
    assert ahead.first_user(int(_h(1, 2, 4)[2])) == 1
    assert ahead.leave(_h(1, 2, 3))  # the oldest of the two identical prompts leaves
    assert list(ahead.users_of(int(_h(1, 2, 3)[2]))) == [2]
    assert not ahead.leave(_h(5, 6))  # never announced: nothing changes
    assert not ahead.leave(_h())
    assert ahead.deepest_shared(_h(1, 2, 9)) == 2 and ahead.deepest_shared(_h(8)) == 0
    ahead.check_integrity()
    assert ahead.leave(_h(1, 2, 4)) and ahead.leave(_h(1, 2, 3))
    assert len(ahead) == 0 and ahead.users(int(_h(1)[0])) == 0


def test_lookahead_integrity_names_a_lost_count():
    ahead = QueueLookahead()
    ahead.join(_h(1, 2))
    ahead._users[int(_h(1)[0])].clear()
    with pytest.raises(RuntimeError, match="lookahead counts 1 queued prefixes, the queue 2"):
        ahead.check_integrity()


def test_queue_aware_takes_unused_states_first_then_the_latest_needed():
    tree = tree_with([1, 2], [3, 4], [5, 6], [7])  # slots 0..3, LRU in that order
    book = tree.books[Tier.DEVICE]
    ahead = QueueLookahead()
    policy = QueueAware(LruEviction(), ahead)
    # empty queue: the base order exactly
    assert [n.mamba.value for n in policy.pick(Tier.DEVICE, states(tree), 2,
                                                book.state_unlocked)] == [0, 1]
    ahead.join(_h(5, 6, 9))  # will resume from [5, 6] first ...
    ahead.join(_h(1, 2, 9))  # ... then from [1, 2]
    picked = policy.pick(Tier.DEVICE, states(tree), 3, book.state_unlocked)
    assert [n.mamba.value for n in picked] == [1, 3, 0]  # unused by LRU, then the later use
    assert policy.queue_picks == 1
    assert policy.pick(Tier.DEVICE, states(tree), 0, book.state_unlocked) == []
    policy.check_integrity()


def test_a_state_every_queued_user_passes_deeper_is_shadowed():
    tree = tree_with([1, 2], [1, 2, 3, 4], [7])  # [1, 2] has a deeper state below it
    book = tree.books[Tier.DEVICE]
    ahead = QueueLookahead()
    policy = QueueAware(LruEviction(), ahead)
    ahead.join(_h(1, 2, 3, 4, 5))  # resumes from [1, 2, 3, 4], not [1, 2]
    ahead.join(_h(7, 8))
    shallow = tree.match_prefix(np.array([1, 2])).last_device_node
    assert policy.next_use(shallow) is None
    picked = policy.pick(Tier.DEVICE, states(tree), 1, book.state_unlocked)
    assert [n.mamba.value for n in picked] == [0]
    ahead.join(_h(1, 2, 6))  # a request branching at [1, 2]: now it is needed
    assert policy.next_use(shallow) == 2
    picked = policy.pick(Tier.DEVICE, states(tree), 3, book.state_unlocked)
    assert [n.mamba.value for n in picked] == [0, 2, 1]  # first uses 2, 1, 0: latest first


def test_needed_states_go_by_pages_saved_per_queue_distance():
    """value = saved / (1 + distance)^DISTANCE_POWER, least first: a far user's deep state
    can outlast a near user's shallow one."""
    tree = tree_with([1, 2], [1, 2, 3, 4, 5, 6], [7])  # slots 0, 1, 2
    book = tree.books[Tier.DEVICE]
    ahead = QueueLookahead()
    policy = QueueAware(LruEviction(), ahead)
    ahead.join(_h(7, 8))  # place 0: resumes from [7], saving 1 page
    ahead.join(_h(1, 2, 3, 4, 5, 6, 9))  # place 1: from the deep state, 4 pages past [1, 2]
    ahead.join(_h(1, 2, 8))  # place 2: from [1, 2], 2 pages
    deep = tree.match_prefix(np.array([1, 2, 3, 4, 5, 6])).last_device_node
    power = DISTANCE_POWER
    assert policy.value(deep, 1) == pytest.approx(4 / 2 ** power)
    assert ahead.head() == 0 and QueueLookahead().head() is None
    picked = policy.pick(Tier.DEVICE, states(tree), 3, book.state_unlocked)
    # 2 / 3^p < 1 / 1 < 4 / 2^p; the latest-first-use order would take [1, 2], deep, [7]
    assert [n.mamba.value for n in picked] == [0, 2, 1]
    assert policy.queue_picks == 3
    assert ahead.leave(_h(7, 8)) and ahead.head() == 1  # the head follows the queue


def test_queue_branch_tracks_where_a_queued_prompt_branches():
    ahead = QueueLookahead()
    policy = QueueBranchAdmission(64, ahead)
    alone = ticket_for(policy, list(range(8)), prompt_pages=8, grid=2)
    assert (alone.branch_pages, alone.then_pages, policy.queue_points) == (None, None, 0)
    ahead.join(_h(10, 11, 12, 13, 14, 50, 51))  # will share 5 pages: the grid point at 4
    t = ticket_for(policy, list(range(10, 18)), prompt_pages=8, grid=2)
    assert (t.seen_pages, t.branch_pages, t.then_pages, policy.queue_points) == (0, 4, None, 1)
    assert policy.admit(CheckpointEvent.CHUNK_END, t, 4)
    assert not policy.admit(CheckpointEvent.CHUNK_END, t, 6)
    # the ghost branch point (2 pages shared with the last prompt) stays; the queue's
    # deeper point (6 pages shared with a waiting prompt) is tracked after it
    ahead.join(_h(10, 11, 20, 21, 22, 23, 70))
    t = ticket_for(policy, [10, 11, 20, 21, 22, 23, 24, 25], prompt_pages=8, grid=2)
    assert (t.seen_pages, t.branch_pages, t.then_pages) == (2, 2, 6)
    assert [policy.admit(CheckpointEvent.CHUNK_END, t, p) for p in (2, 4, 6)] == [
        True, False, True]
    # a hit already as deep as the queue's point: nothing more to track
    t = ticket_for(policy, [10, 11, 20, 21, 22, 23, 30, 31], prompt_pages=8, grid=2, usable=6)
    assert t.then_pages is None and policy.queue_points == 2
    policy.check_integrity()


def test_reading_the_queue_keeps_the_states_a_saturated_replay_resumes_from():
    """The shared synthetic trace at its own rate saturates one GLM-5.3-Flash rank (60 GiB,
    fp8 KV): the queue holds the next turns, and reading it lifts what ghost-branch +
    flop-aware reuses by 80 %, to 81 % of the replay's own serving bound (figures of this
    replay; docs/state-policies.md)."""
    from kvledger.report.policy_compare import replay_pair
    from kvledger.sglang.deploy import Deployment, KVDtype
    from kvledger.sglang.plan import make_plan
    from kvledger.sim.config import SimConfig
    from kvledger.sim.replay import simulate
    from kvledger.sim.sources import load_workload
    trace = Path(__file__).resolve().parents[1] / "data" / "synthetic_trace.jsonl"
    plan = make_plan("glm-5.3-flash", Deployment(kv_cache_dtype=KVDtype.FP8_E4M3),
                     available_gib=60)
    work = load_workload(trace=trace)

    def usable(a, e):
        s = simulate(plan, work, SimConfig(state_admission=a, state_eviction=e)).summary
        return round(s.counters.usable_hit_rate, 3)
    assert usable(StateAdmission.GHOST_BRANCH, StateEviction.FLOP_AWARE) == 0.247
    # and within 80 % of its own serving bound (kvledger.bound.serving), the target
    row = replay_pair(plan, work, SimConfig(),
                      (StateAdmission.QUEUE_BRANCH, StateEviction.QUEUE_AWARE))
    assert round(row.usable_hit, 3) == 0.447
    assert round(row.serving_bound.usable_hit, 3) == 0.554
    assert row.fraction_of_serving_bound >= 0.80
