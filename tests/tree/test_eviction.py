"""Eviction under pressure of each component, tombstones, and what a removed leaf leaves.

FULL is leaf-first LRU and a MAMBA eviction of an internal node leaves a tombstone (SGLang
UnifiedTreeCore._cascade_evict; MambaRadixCache._tombstone_internal_node in 0.5.20); a match
refreshes only the consumed state in MAMBA's LRU (SGLang MambaComponent.refresh_lru, phase
MATCH_END). Stateless parents keep their KV under 0.5.21+ rules and are pruned under 0.5.20's.
"""

from __future__ import annotations

import numpy as np
import pytest

from kvledger.tree import PRUNING_TREE, UNIFIED_TREE, Component, RadixTree, Tier, TreeRules
from tree.radix_factories import Slots, strip


def _tree_with(*sequences: np.ndarray, rules: TreeRules = UNIFIED_TREE) -> tuple[RadixTree, list]:
    tree, kv, states = RadixTree(page_size=1, rules=rules), Slots(0), Slots(0)
    nodes = [tree.insert(s, kv.take(len(s)), states.one()).node for s in sequences]
    return tree, nodes


def test_full_pressure_evicts_the_least_recent_leaf_and_keeps_the_stateless_parent():
    """SGLang 0.5.21+ (UnifiedTreeCore._iteratively_delete_tombstone_ancestors stops at a node
    with device KV): the parent left childless stays as a KV-only leaf, evicted on its own."""
    a = strip(0, 100)
    b = np.r_[strip(0, 50), strip(200, 50)]
    tree, (node_a, node_b) = _tree_with(a, b)  # b split a at 50; the split parent has no state
    tree.match_prefix(a)  # a is now more recent than b

    first = tree.evict(full_tokens=1)
    assert first.full_indices.tolist() == list(range(150, 200))  # b's own 50 tokens
    assert first.mamba_slots.tolist() == [1]
    assert not node_b.alive and node_a.alive

    parent = node_a.parent
    second = tree.evict(full_tokens=1)
    assert second.full_indices.tolist() == list(range(50, 100))  # a's leaf and state only
    assert second.mamba_slots.tolist() == [0]
    assert parent.alive and parent.mamba.value is None and tree.sizes().full_tokens == 50
    m = tree.match_prefix(a)  # the KV-only leaf still counts toward the KV hit
    assert (m.full_kv_hit_length, m.device_hit_length, m.mamba_branching_seqlen) == (50, 0, None)
    assert tree.evict(full_tokens=1).full_indices.tolist() == list(range(50))
    assert tree.root.children == {}
    tree.check_integrity()


def test_full_pressure_under_0_5_20_rules_prunes_stateless_parents():
    """SGLang 0.5.20 (MambaRadixCache._iteratively_delete_tombstone_leaf)."""
    a = strip(0, 100)
    b = np.r_[strip(0, 50), strip(200, 50)]
    tree, (node_a, node_b) = _tree_with(a, b, rules=PRUNING_TREE)
    tree.match_prefix(a)
    assert tree.evict(full_tokens=1).full_indices.tolist() == list(range(150, 200))
    second = tree.evict(full_tokens=1)
    # a's leaf goes; its parent (tokens 0..49) then has no child and no state: pruned.
    assert sorted(second.full_indices.tolist()) == list(range(100))
    assert second.mamba_slots.tolist() == [0]
    assert tree.root.children == {}
    assert tree.sizes().full_tokens == 0
    tree.check_integrity()


def test_full_eviction_skips_locked_paths_and_stops_short():
    tree, (node_a, node_b) = _tree_with(strip(0, 40), strip(100, 60))
    receipt = tree.lock(node_a)
    freed = tree.evict(full_tokens=1_000)
    assert freed.num_full_tokens == 60 and freed.mamba_slots.tolist() == [1]
    assert tree.evict(full_tokens=1).num_full_tokens == 0
    sizes = tree.sizes()
    assert (sizes.full_protected_tokens, sizes.full_evictable_tokens) == (40, 0)
    tree.unlock(receipt)
    assert tree.evict(full_tokens=1).full_indices.tolist() == list(range(40))
    tree.check_integrity()


def test_internal_node_locked_by_a_descendant_is_not_a_full_victim():
    tree, (parent, child) = _tree_with(strip(0, 30), strip(0, 50))
    receipt = tree.lock(child)
    assert tree.evict(full_tokens=10).num_full_tokens == 0
    tree.unlock(receipt)
    freed = tree.evict(full_tokens=10)
    assert freed.full_indices.tolist() == list(range(60, 80))  # the leaf's own 20 tokens
    assert parent.alive and parent.full.value is not None
    tree.check_integrity()


def test_mamba_pressure_tombstones_internal_nodes_and_keeps_their_kv():
    tree, (inner, leaf) = _tree_with(strip(0, 100), strip(0, 150))
    freed = tree.evict(mamba_slots=1)
    assert freed.mamba_slots.tolist() == [0] and freed.num_full_tokens == 0
    assert inner.alive and inner.mamba.value is None and inner.full.value is not None
    m = tree.match_prefix(strip(0, 100))
    assert (m.full_kv_hit_length, m.device_hit_length, m.mamba_branching_seqlen) == (100, 0, 64)
    m = tree.match_prefix(strip(0, 150))  # the leaf's state still serves the whole path
    assert (m.device_hit_length, m.mamba_src_slot) == (150, 1)
    sizes = tree.sizes()
    assert (sizes.mamba_slots, sizes.full_tokens) == (1, 150)
    tree.check_integrity()


@pytest.mark.parametrize("rules", [UNIFIED_TREE, PRUNING_TREE], ids=lambda r: r.name)
def test_mamba_eviction_of_a_leaf_state_drops_the_leaf(rules):
    tree, (a, b) = _tree_with(np.r_[strip(0, 20), [7]], np.r_[strip(0, 20), [8]], rules=rules)
    shared = a.parent
    assert shared.mamba.value is None and shared.num_tokens == 20
    first = tree.evict(mamba_slots=1)
    assert (first.mamba_slots.tolist(), first.full_indices.tolist()) == ([0], [20])
    assert not a.alive and shared.alive
    second = tree.evict(mamba_slots=1)
    assert second.mamba_slots.tolist() == [1]
    if rules.keeps_stateless_kv:
        # b's leaf goes whole (MambaComponent._evict_device_next_node hands a device leaf to
        # evict_device_leaf); the stateless shared prefix stays as a KV-only leaf.
        assert second.full_indices.tolist() == [41]
        assert shared.alive and shared.num_children_on[0] == 0 and tree.sizes().full_tokens == 20
    else:
        # b's leaf goes, and the stateless shared prefix goes with it: nothing could use it.
        assert sorted(second.full_indices.tolist()) == list(range(20)) + [41]
        assert tree.root.children == {}
    tree.check_integrity()


def test_match_refreshes_only_the_consumed_state_in_mamba_lru():
    inner, leaf, other = strip(0, 100), strip(0, 150), strip(500, 10)
    tree, (n_inner, n_leaf, n_other) = _tree_with(inner, leaf, other)
    # Matching `leaf` walks through `inner` but consumes only the leaf's state, so the
    # LRU order of states becomes inner (0), other (2), leaf (1).
    tree.match_prefix(leaf)
    assert tree.evict(mamba_slots=1).mamba_slots.tolist() == [0]
    assert tree.evict(mamba_slots=1).mamba_slots.tolist() == [2]
    assert not n_other.alive and n_inner.alive and n_leaf.mamba.value == 1
    tree.check_integrity()


def test_locked_state_is_skipped_and_a_full_lock_alone_allows_tombstoning():
    tree, (inner, leaf) = _tree_with(strip(0, 10), strip(0, 20))
    leaf_receipt = tree.lock(leaf)  # pins the leaf's state and FULL on the whole path
    freed = tree.evict(mamba_slots=2)
    assert freed.mamba_slots.tolist() == [0]  # inner's state is not pinned by the leaf's lock
    assert inner.alive and inner.full.lock_ref == 1
    assert tree.evict(mamba_slots=1).num_mamba_slots == 0
    tree.unlock(leaf_receipt)
    tree.check_integrity()


def test_evict_counts_side_effect_frees_toward_both_targets():
    tree, (a, b) = _tree_with(strip(0, 10), strip(100, 10))
    freed = tree.evict(full_tokens=10, mamba_slots=1)
    # Evicting one leaf for FULL freed its state too, which meets the MAMBA target.
    assert (freed.num_full_tokens, freed.num_mamba_slots) == (10, 1)
    assert tree.sizes().mamba_slots == 1
    tree.check_integrity()


@pytest.mark.parametrize("rules", [UNIFIED_TREE, PRUNING_TREE], ids=lambda r: r.name)
def test_full_order_follows_last_access_across_splits(rules):
    a, b, c = strip(0, 10), strip(100, 10), strip(200, 10)
    tree, nodes = _tree_with(a, b, c, rules=rules)
    tree.match_prefix(a)
    tree.match_prefix(np.r_[b[:4], [9]])  # diverges inside b: splits, no state at 4, b not used
    freed = [tree.evict(full_tokens=1).full_indices.tolist() for _ in range(4)]
    # The split stamps b's new parent, then b's suffix, as just accessed (SGLang
    # UnifiedTreeCore._split_node; MambaRadixCache._split_node alike), so LRU is c, a, b.
    assert freed[:2] == [list(range(20, 30)), list(range(10))]
    if rules.keeps_stateless_kv:  # the split parent outlives its leaf, then goes on its own
        assert freed[2:] == [list(range(14, 20)), list(range(10, 14))]
    else:  # 0.5.20: the split parent goes with its leaf
        assert freed[2:] == [list(range(14, 20)) + list(range(10, 14)), []]
    tree.check_integrity()


def test_peek_eviction_names_the_next_victim_on_each_tier_and_changes_nothing():
    a, b = strip(0, 100), np.r_[strip(0, 50), strip(200, 50)]
    tree, (node_a, node_b) = _tree_with(a, b)  # b split a at 50; parent 0..49 has no state
    tree.match_prefix(a)  # a's leaf and state are now more recent than b's
    sizes = tree.sizes()
    assert tree.peek_eviction(Tier.DEVICE, Component.FULL) is node_b
    assert tree.peek_eviction(Tier.DEVICE, Component.MAMBA) is node_b
    assert tree.peek_eviction(Tier.DEVICE, Component.FULL) is node_b and tree.sizes() == sizes
    receipt = tree.lock(node_b)  # pins b's path (and the shared parent) and b's state
    assert tree.peek_eviction(Tier.DEVICE, Component.FULL) is node_a
    assert tree.peek_eviction(Tier.DEVICE, Component.MAMBA) is node_a
    assert tree.evict(full_tokens=1).full_indices.tolist() == list(range(50, 100))
    assert not node_a.alive
    assert tree.peek_eviction(Tier.DEVICE, Component.FULL) is None  # all that is left is pinned
    tree.unlock(receipt)
    # host: nothing backed up yet, then b's path is: b is the host leaf, its state the oldest
    assert tree.peek_eviction(Tier.HOST, Component.FULL) is None
    parent = node_b.parent
    tree.set_host_value(parent, Component.FULL, strip(1000, 50))
    assert tree.peek_eviction(Tier.HOST, Component.FULL) is parent
    tree.set_host_value(node_b, Component.FULL, strip(1050, 50))
    tree.set_host_value(node_b, Component.MAMBA, 7)
    assert tree.peek_eviction(Tier.HOST, Component.FULL) is node_b
    assert tree.peek_eviction(Tier.HOST, Component.MAMBA) is node_b
    assert tree.evict_host(full_tokens=1).full_indices.tolist() == list(range(1050, 1100))
    tree.check_integrity()
    with pytest.raises(ValueError, match="peek_eviction: expected"):
        tree.peek_eviction(0, Component.FULL)
