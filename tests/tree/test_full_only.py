"""A FULL-only tree (no state component): SGLang's RadixCache for dense models and baselines.

Every cached node is a match point, so the device hit is the whole cached prefix
(RadixCache._match_prefix_helper); eviction is leaf-first LRU over KV alone (RadixCache.evict).
"""

from __future__ import annotations

import numpy as np
import pytest

from kvledger.sglang.rules import RULES
from kvledger.tree import (
    FULL_ONLY,
    PRUNING_TREE,
    UNIFIED_TREE,
    Component,
    RadixTree,
    Tier,
    TreeRules,
)
from tree.radix_factories import strip


def _dense(page_size: int = 1) -> RadixTree:
    return RadixTree(page_size=page_size, components=FULL_ONLY)


def test_the_whole_cached_prefix_is_a_device_hit():
    tree = _dense()
    done = tree.insert(strip(0, 100), strip(1000, 100))
    assert (done.prefix_length, done.mamba_existed) == (0, False)
    m = tree.match_prefix(np.r_[strip(0, 70), [5, 5]])  # diverges inside the node: a split
    assert (m.device_hit_length, m.full_kv_hit_length, m.host_hit_length) == (70, 70, 0)
    assert m.device_indices.tolist() == list(range(1000, 1070))
    assert m.mamba_branching_seqlen is None and m.mamba_src_slot is None
    assert m.last_device_node is m.best_match_node and m.last_device_node.num_tokens == 70
    receipt = tree.lock(m.last_device_node)
    assert not receipt.mamba_locked
    assert tree.evict(full_tokens=100).full_indices.tolist() == list(range(1070, 1100))
    tree.unlock(receipt)
    assert tree.sizes().mamba_slots == 0
    tree.check_integrity()


def test_reinserting_a_cached_prefix_returns_the_callers_duplicates():
    tree = _dense(page_size=2)
    tree.insert(strip(0, 6), strip(10, 6))
    again = tree.insert(strip(0, 8), strip(20, 8))
    assert again.prefix_length == 6 and again.duplicate_indices.tolist() == list(range(20, 26))
    assert tree.match_prefix(strip(0, 9)).device_indices.tolist() == [*range(10, 16), 26, 27]
    tree.check_integrity()


def test_eviction_is_least_recent_leaf_first_and_parents_follow():
    tree = _dense()
    tree.insert(strip(0, 10), strip(0, 10))
    tree.insert(np.r_[strip(0, 5), strip(50, 5)], strip(10, 10))  # splits at 5
    tree.match_prefix(strip(0, 10))  # the first branch is now the most recent
    order = [tree.evict(full_tokens=1).full_indices.tolist() for _ in range(3)]
    assert order == [list(range(15, 20)), list(range(5, 10)), list(range(5))]
    assert tree.root.children == {}
    tree.check_integrity()


def test_state_arguments_are_refused_by_name():
    tree = _dense()
    with pytest.raises(ValueError, match="mamba_slot: this tree has no MAMBA component"):
        tree.insert(strip(0, 4), strip(0, 4), 3)
    node = tree.insert(strip(0, 4), strip(0, 4)).node
    with pytest.raises(ValueError, match="evict: mamba_slots=1, but this tree has no MAMBA"):
        tree.evict(mamba_slots=1)
    with pytest.raises(ValueError, match="evict_host: mamba_slots=2"):
        tree.evict_host(mamba_slots=2)
    tree.set_host_value(node, Component.FULL, strip(100, 4))
    with pytest.raises(ValueError, match="set_host_value: this tree has no MAMBA component"):
        tree.set_host_value(node, Component.MAMBA, 1)
    assert tree.peek_eviction(Tier.DEVICE, Component.MAMBA) is None
    assert tree.evict(full_tokens=4).num_full_tokens == 4
    m = tree.match_prefix(strip(0, 4))  # backed up: a host hit, loaded back without a state
    assert (m.device_hit_length, m.host_hit_length) == (0, 4)
    tree.restore_device_value(node, Component.FULL, strip(0, 4))
    assert tree.match_prefix(strip(0, 4)).device_hit_length == 4
    tree.check_integrity()


def test_constructor_checks_components_and_rules():
    with pytest.raises(ValueError, match="components: expected"):
        RadixTree(page_size=1, components=(Component.MAMBA,))
    with pytest.raises(ValueError, match="rules: expected a TreeRules"):
        RadixTree(page_size=1, rules="sglang-0.5.23")


def test_every_release_read_keeps_stateless_kv_from_021():
    """0.5.21 and 0.5.23 share UnifiedTreeCore._iteratively_delete_tombstone_ancestors;
    0.5.8 and 0.5.9 prune with MambaRadixCache._iteratively_delete_tombstone_leaf."""
    trees = {r.name: TreeRules.from_rules(r) for r in RULES.values()}
    assert trees == {"sglang-0.5.8": PRUNING_TREE, "sglang-0.5.9": PRUNING_TREE,
                     "sglang-0.5.21": UNIFIED_TREE, "sglang-0.5.23": UNIFIED_TREE}
