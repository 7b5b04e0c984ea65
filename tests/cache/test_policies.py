"""State admission and eviction policies: each decision exact, on hand-made trees and tickets."""

from __future__ import annotations

import numpy as np
import pytest

from kvledger.cache.policies import CheckpointEvent, StateAdmission, StateEviction, build_policies
from kvledger.cache.policies.admission import (
    EngineAdmission,
    GhostBranchAdmission,
    MarconiAdmission,
    ReuseFilteredAdmission,
)
from kvledger.cache.policies.eviction import AlphaTuner, FlopAware, KeepJunctions, path_hash
from kvledger.cache.policies.ghost import GhostTable, prefix_hashes
from kvledger.tree.node import Tier
from kvledger.tree.radix import RadixTree

CHUNK, PREFILL, FINISH = (CheckpointEvent.CHUNK_END, CheckpointEvent.PREFILL_END,
                          CheckpointEvent.FINISH)


def ticket_for(policy, keys, *, prompt_pages=None, usable=0, tree_branch=None, grid=1):
    keys = np.asarray(keys, dtype=np.int64)
    return policy.ticket(keys=keys, prompt_pages=len(keys) if prompt_pages is None else
                         prompt_pages, usable_pages=usable, tree_branch_pages=tree_branch,
                         grid_pages=grid)


# ---- ghost table -------------------------------------------------------------------------

def test_prefix_hashes_name_prefixes_not_requests():
    a, b = prefix_hashes(np.array([1, 2, 3, 4])), prefix_hashes(np.array([1, 2, 9, 4]))
    assert a[:2].tolist() == b[:2].tolist()
    assert len(set(a.tolist()) | set(b.tolist())) == 6  # the last two of each differ
    assert prefix_hashes(np.array([2, 1]))[1] != prefix_hashes(np.array([1, 2]))[1]  # order


def test_ghost_table_is_bounded_lru():
    g = GhostTable(capacity=3)
    g.add(np.array([1, 2, 3], dtype=np.uint64))
    g.add(np.array([1, 4], dtype=np.uint64))  # 1 refreshed, 2 dropped
    assert (g.seen(1), g.seen(2), g.seen(3), g.seen(4), len(g)) == (True, False, True, True, 3)
    g.check_integrity()
    with pytest.raises(ValueError, match="capacity 0"):
        GhostTable(0)


# ---- admission ---------------------------------------------------------------------------

def test_engine_admits_every_prefill_forward_and_finish_and_the_trees_branch():
    t = ticket_for(EngineAdmission(), [1, 2, 3], tree_branch=2)
    assert t.branch_pages == 2
    policy = EngineAdmission()
    # SGLang caches every prefill forward (cache_unfinished_req) and every finish
    assert [policy.admit(e, t, 3) for e in (CHUNK, PREFILL, FINISH)] == [True, True, True]


def test_marconi_admits_branch_points_and_the_last_decoded_token_only():
    policy = MarconiAdmission()
    t = ticket_for(policy, [1, 2, 3, 4], tree_branch=2)
    assert policy.admit(CHUNK, t, 2) and policy.admit(PREFILL, t, 2)
    assert not policy.admit(CHUNK, t, 3) and not policy.admit(PREFILL, t, 4)
    assert policy.admit(FINISH, t, 4)


def test_reuse_filtered_admits_only_prefixes_an_earlier_request_had():
    policy = ReuseFilteredAdmission(capacity=100)
    first = ticket_for(policy, [1, 2, 3, 4])
    assert first.seen_pages == 0 and not policy.admit(CHUNK, first, 2)
    second = ticket_for(policy, [1, 2, 7, 8, 9])
    assert second.seen_pages == 2
    assert policy.admit(CHUNK, second, 2) and not policy.admit(CHUNK, second, 3)
    assert not policy.admit(FINISH, second, 5)
    assert not policy.admit(PREFILL, second, 2)  # not a branch point: the tree named none


def test_ghost_branch_finds_branch_points_the_tree_lost():
    policy = GhostBranchAdmission(capacity=100)
    ticket_for(policy, [1, 2, 3, 4, 5, 6])
    t = ticket_for(policy, [1, 2, 3, 4, 9, 9], usable=0, tree_branch=None)
    assert (t.branch_pages, t.seen_pages) == (4, 4)
    assert policy.admit(PREFILL, t, 4) and not policy.admit(CHUNK, t, 2)
    # a usable hit already as deep as the ghost's branch: the tree's branch (none) stands
    t = ticket_for(policy, [1, 2, 3, 4, 8], usable=4, tree_branch=None)
    assert t.branch_pages is None


def test_ghost_branch_grid_points_only():
    policy = GhostBranchAdmission(capacity=100)
    ticket_for(policy, [1, 2, 3, 4, 5, 6], grid=2)
    t = ticket_for(policy, [1, 2, 3, 9, 9, 9], grid=2)
    assert t.branch_pages == 2  # shared 3 pages; the state grid is 2 pages


def test_ghost_branch_stops_caching_finish_states_nobody_extends():
    policy = GhostBranchAdmission(capacity=1000, finish_reuse_rate=0.25, window=4)
    verdicts = []
    for i in range(12):  # every request is new: no prompt extends an earlier sequence
        keys = [100 * i + j for j in range(3)]
        t = ticket_for(policy, keys)
        verdicts.append(policy.admit(FINISH, t, 3))
    assert verdicts == [True] * 4 + [False] * 8


def test_ghost_branch_keeps_finish_states_while_chats_extend_them():
    policy = GhostBranchAdmission(capacity=1000, finish_reuse_rate=0.25, window=4)
    seq = [1, 2]
    verdicts = []
    for turn in range(12):  # each turn's prompt is the last sequence plus new pages
        t = ticket_for(policy, seq + [50 + turn], prompt_pages=len(seq))
        verdicts.append(policy.admit(FINISH, t, len(seq) + 1))
        seq = seq + [50 + turn]
    assert all(verdicts)


# ---- eviction ----------------------------------------------------------------------------

def tree_with(*seqs):
    """Page-1 tree, one state per inserted sequence, slots numbered in insertion order."""
    tree = RadixTree(page_size=1, mamba_chunk_tokens=1)
    base = 0
    for slot, seq in enumerate(seqs):
        arr = np.array(seq, dtype=np.int64)
        tree.insert(arr, np.arange(base, base + len(arr)), slot)
        base += len(arr)
    return tree


def states(tree):
    return tree.books[Tier.DEVICE].states


def test_keep_junctions_spares_a_shared_prefix_state():
    tree = tree_with([1, 2], [1, 2, 3], [1, 2, 4], [7])
    # [1, 2] now has two children: a junction; LRU alone would take it first
    book = tree.books[Tier.DEVICE]
    lru = states(tree).oldest(2, book.state_unlocked)
    assert [n.mamba.value for n in lru] == [0, 1]
    picked = KeepJunctions().pick(Tier.DEVICE, states(tree), 2, book.state_unlocked)
    assert [n.mamba.value for n in picked] == [1, 2]
    picked = KeepJunctions().pick(Tier.DEVICE, states(tree), 4, book.state_unlocked)
    assert [n.mamba.value for n in picked] == [1, 2, 3, 0]  # the junction last


def test_tree_evicts_in_the_policys_order():
    tree = tree_with([1, 2], [1, 2, 3], [1, 2, 4], [7])
    tree.state_victims = KeepJunctions()
    freed = tree.evict(mamba_slots=1)
    assert freed.mamba_slots.tolist() == [1]
    tree.check_integrity()


def test_flop_aware_at_alpha_zero_is_lru_and_large_alpha_keeps_deep_states():
    tree = tree_with([1, 2, 3, 4, 5, 6, 7, 8], [9])  # deep state inserted first
    book = tree.books[Tier.DEVICE]
    policy = FlopAware(flops_of=lambda pages: float(pages * pages), slot_bytes=10,
                       page_bytes=0, memory=16)
    assert policy.tuner.alpha == 0.0
    assert [n.mamba.value for n in policy.pick(Tier.DEVICE, states(tree), 1,
                                               book.state_unlocked)] == [0]
    policy.tuner.index = policy.tuner.alphas.index(4.0)
    # scores: deep = 0/2 + 4 · 1 = 4, shallow = 1/2 + 4 · (1/64) = 0.5625
    assert [n.mamba.value for n in policy.pick(Tier.DEVICE, states(tree), 1,
                                               book.state_unlocked)] == [1]


def test_alpha_tuner_moves_to_the_blend_that_would_have_kept_what_came_back():
    tuner = AlphaTuner((0.0, 1.0), memory=8, retune_every=1, flops_of=float)
    keys = np.array([5, 6, 7])
    hashes = prefix_hashes(keys)
    tuner.remember(0, int(hashes[2]), 3)  # α = 0 (in use) evicted the 3-page prefix
    tuner.remember(1, int(hashes[0]), 1)  # α = 1 would have evicted a 1-page one
    tuner.observe(hashes, prompt_pages=3, usable_pages=0)  # the 3-page prefix came back
    assert tuner.regret == [1.5, 0.5]  # charged 3 and 1 FLOPs, halved at the retune
    assert tuner.alpha == 1.0 and tuner.retunes == 1


def test_path_hash_is_the_requests_prefix_hash():
    tree = tree_with([1, 2, 3])
    node = states(tree).oldest(1, lambda n: True)[0]
    assert path_hash(node) == int(prefix_hashes(np.array([1, 2, 3]))[-1])


@pytest.mark.parametrize("admission", list(StateAdmission))
@pytest.mark.parametrize("eviction", list(StateEviction))
def test_every_pair_builds(admission, eviction):
    chosen = build_policies(admission, eviction, flops_of=float, slot_bytes=1, page_bytes=1,
                            num_slots=4)
    assert chosen.label == f"{admission.value} + {eviction.value}"
