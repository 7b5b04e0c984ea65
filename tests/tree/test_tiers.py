"""Host-tier hooks: backup, loadback, host locks and host eviction.

Order rules follow SPEC §6 (backups go ancestors first; loadback restores KV root-first and
the best match's state), and a split leaves the MAMBA host copy on the child (SGLang
MambaComponent.redistribute_on_node_split).
"""

from __future__ import annotations

import numpy as np
import pytest

from kvledger.tree import PRUNING_TREE, UNIFIED_TREE, Component, RadixTree, Tier
from tree.radix_factories import Slots, path_nodes, strip


def _two_level_tree() -> tuple[RadixTree, object, object]:
    """root -- p (0..9, state 0) -- c (10..19, state 1); device slots = token ids."""
    tree = RadixTree(page_size=1)
    parent = tree.insert(strip(0, 10), strip(0, 10), 0).node
    child = tree.insert(strip(0, 20), strip(0, 20), 1).node
    return tree, parent, child


def _back_up(tree: RadixTree, *nodes) -> None:
    """Back up ``nodes`` root-first: host KV slots from 1000, host state slots from 0."""
    host, states = Slots(1000), Slots(0)
    for node in nodes:
        tree.set_host_value(node, Component.FULL, host.take(node.num_tokens))
        if node.mamba.value is not None:
            tree.set_host_value(node, Component.MAMBA, states.one())


@pytest.fixture
def backed_up() -> tuple[RadixTree, object, object]:
    """The two-level tree with both nodes backed up to host."""
    tree, parent, child = _two_level_tree()
    _back_up(tree, parent, child)
    return tree, parent, child


def test_backup_goes_root_first_and_state_after_kv():
    tree, parent, child = _two_level_tree()
    with pytest.raises(ValueError, match="back up the parent"):
        tree.set_host_value(child, Component.FULL, strip(0, 10))
    with pytest.raises(ValueError, match="FULL KV before its state"):
        tree.set_host_value(parent, Component.MAMBA, 0)
    with pytest.raises(ValueError, match="host_indices: expected one slot per token"):
        tree.set_host_value(parent, Component.FULL, strip(0, 3))
    with pytest.raises(ValueError, match="root holds nothing"):
        tree.set_host_value(tree.root, Component.FULL, [])
    tree.set_host_value(parent, Component.FULL, strip(500, 10))
    with pytest.raises(ValueError, match="already on host"):
        tree.set_host_value(parent, Component.FULL, strip(600, 10))
    tree.set_host_value(parent, Component.MAMBA, 3)
    sizes = tree.sizes(Tier.HOST)
    assert (sizes.full_tokens, sizes.mamba_slots) == (10, 1)
    tree.check_integrity()


def test_device_eviction_keeps_backed_up_nodes_as_host_hits(backed_up):
    tree, parent, child = backed_up
    freed = tree.evict(full_tokens=20)
    assert sorted(freed.full_indices.tolist()) == list(range(20))
    assert sorted(freed.mamba_slots.tolist()) == [0, 1]
    assert parent.alive and child.alive
    assert tree.sizes().full_tokens == 0

    m = tree.match_prefix(strip(0, 25))
    assert (m.full_kv_hit_length, m.device_hit_length, m.host_hit_length) == (20, 0, 20)
    assert m.best_match_node is child and m.last_device_node is tree.root
    assert m.mamba_src_slot is None  # the state is on host: load it back first
    tree.check_integrity()


def test_loadback_is_root_first_and_restores_a_device_hit(backed_up):
    tree, parent, child = backed_up
    tree.evict(full_tokens=20)
    with pytest.raises(ValueError, match="load back the parent"):
        tree.restore_device_value(child, Component.FULL, strip(50, 10))
    with pytest.raises(ValueError, match="load back .*FULL KV before its state"):
        tree.restore_device_value(parent, Component.MAMBA, 7)
    tree.restore_device_value(parent, Component.FULL, strip(50, 10))
    tree.restore_device_value(child, Component.FULL, strip(60, 10))
    tree.restore_device_value(child, Component.MAMBA, 7)  # only the best match's state
    with pytest.raises(ValueError, match="already on device"):
        tree.restore_device_value(child, Component.MAMBA, 8)
    m = tree.match_prefix(strip(0, 20))
    assert m.device_indices.tolist() == list(range(50, 70))
    assert (m.host_hit_length, m.mamba_src_slot, m.last_device_node is child) == (0, 7, True)
    tree.check_integrity()


def test_insert_over_host_only_kv_adopts_the_callers_slots():
    tree, parent, child = _two_level_tree()
    _back_up(tree, parent)
    tree.evict(full_tokens=20)  # child (no host copy) removed; parent host-only
    assert not child.alive and parent.full.value is None
    done = tree.insert(strip(0, 12), strip(300, 12), 9)
    assert (done.prefix_length, len(done.duplicate_indices), done.mamba_existed) == (10, 0, False)
    assert parent.full.value.tolist() == list(range(300, 310))
    assert tree.match_prefix(strip(0, 12)).device_indices.tolist() == list(range(300, 312))
    tree.check_integrity()


def test_split_of_a_backed_up_node_splits_host_values_and_host_locks():
    tree = RadixTree(page_size=2)
    node = tree.insert(strip(0, 8), strip(0, 8), 0).node
    tree.set_host_value(node, Component.FULL, strip(100, 8))
    tree.set_host_value(node, Component.MAMBA, 4)
    receipt = tree.lock_host(node)
    assert (receipt.tier, receipt.mamba_locked) == (Tier.HOST, True)
    tree.match_prefix(np.r_[strip(0, 4), [9, 9]])
    top = node.parent
    assert top.full.host_value.tolist() == [100, 101, 102, 103]
    assert node.full.host_value.tolist() == [104, 105, 106, 107]
    assert (top.full.host_lock_ref, node.full.host_lock_ref) == (1, 1)
    assert (top.mamba.host_value, node.mamba.host_value, node.mamba.host_lock_ref) == (None, 4, 1)
    sizes = tree.sizes(Tier.HOST)
    assert (sizes.full_protected_tokens, sizes.mamba_protected_slots) == (8, 1)
    tree.unlock(receipt)
    sizes = tree.sizes(Tier.HOST)
    assert (sizes.full_evictable_tokens, sizes.mamba_evictable_slots) == (8, 1)
    tree.check_integrity()


def test_evict_host_is_leaf_first_and_respects_host_locks(backed_up):
    tree, parent, child = backed_up
    receipt = tree.lock_host(child)
    pinned = tree.evict_host(full_tokens=100, mamba_slots=5)
    # The child's host lock pins host KV on its whole path but only its own state, so only
    # the parent's host state can go.
    assert (pinned.num_full_tokens, pinned.mamba_slots.tolist()) == (0, [0])
    tree.unlock(receipt)
    first = tree.evict_host(full_tokens=1)
    # The host leaf (child) goes with its host state; both nodes stay: they are on device.
    assert (first.full_indices.tolist(), first.mamba_slots.tolist()) == (
        list(range(1010, 1020)),
        [1],
    )
    assert child.alive and child.full.host_value is None and child.full.value is not None
    second = tree.evict_host(full_tokens=1)
    assert (second.full_indices.tolist(), second.mamba_slots.tolist()) == (
        list(range(1000, 1010)),
        [],
    )
    assert tree.sizes(Tier.HOST).full_tokens == 0 and tree.sizes().full_tokens == 20
    tree.check_integrity()


@pytest.mark.parametrize("rules", [UNIFIED_TREE, PRUNING_TREE], ids=lambda r: r.name)
def test_evict_host_removes_host_only_leaves(rules):
    tree = RadixTree(page_size=1, rules=rules)
    a = tree.insert(np.r_[strip(0, 5), [7]], strip(0, 6), 0).node
    tree.insert(np.r_[strip(0, 5), [8]], strip(6, 6), 1)
    shared = a.parent
    _back_up(tree, shared, *shared.children.values())
    tree.evict(full_tokens=100)
    if rules.keeps_stateless_kv:  # the shared prefix went as a KV-only leaf of its own
        assert tree.sizes().full_tokens == 0 and tree.sizes(Tier.HOST).full_tokens == 7
    freed = tree.evict_host(mamba_slots=2)
    # Both host states go, each with its host-only leaf (nothing is left of either node).
    assert sorted(freed.mamba_slots.tolist()) == [0, 1]
    if rules.keeps_stateless_kv:  # the stateless shared prefix stays on host
        assert sorted(freed.full_indices.tolist()) == [1005, 1006]
        assert shared.alive and tree.sizes(Tier.HOST).full_tokens == 5
    else:  # 0.5.20: the stateless shared prefix goes too
        assert sorted(freed.full_indices.tolist()) == list(range(1000, 1007))
        assert tree.root.children == {}
    tree.check_integrity()


def test_lock_needs_a_value_on_that_tier():
    tree, parent, child = _two_level_tree()
    with pytest.raises(ValueError, match="lock_host: .* no FULL KV on host"):
        tree.lock_host(parent)
    _back_up(tree, parent)
    tree.evict(full_tokens=20)
    with pytest.raises(ValueError, match="lock: .* no FULL KV on device"):
        tree.lock(parent)
    assert path_nodes(tree, strip(0, 10)) == [parent]
    tree.check_integrity()


def test_drop_host_takes_a_subtree_off_host_and_removes_host_only_nodes(backed_up):
    tree, parent, child = backed_up
    tree.evict(full_tokens=10)  # the child leaves the device (KV and state): host-only now
    assert child.full.value is None and child.alive
    dropped = tree.drop_host(parent, Component.FULL)
    # Host KV of both (child first, leaves first), host states of both (slots 0 and 1).
    assert sorted(dropped.full_indices.tolist()) == list(range(1000, 1020))
    assert sorted(dropped.mamba_slots.tolist()) == [0, 1]
    assert not child.alive  # no copy left on either tier
    assert parent.alive and parent.full.host_value is None and parent.full.value is not None
    assert tree.match_prefix(strip(0, 20)).host_hit_length == 0
    tree.check_integrity()


def test_drop_host_state_alone_keeps_the_kv(backed_up):
    tree, _, child = backed_up
    dropped = tree.drop_host(child, Component.MAMBA)
    assert dropped.mamba_slots.tolist() == [1] and len(dropped.full_indices) == 0
    assert child.mamba.host_value is None and child.full.host_value is not None
    assert tree.drop_host(child, Component.MAMBA) is None  # nothing left to drop
    tree.check_integrity()


def test_drop_host_leaves_a_pinned_copy_alone(backed_up):
    tree, parent, child = backed_up
    receipt = tree.lock_host(child)  # a transfer reads the child's host copy
    assert tree.drop_host(parent, Component.FULL) is None
    assert tree.drop_host(child, Component.MAMBA) is None
    assert parent.full.host_value is not None and child.mamba.host_value is not None
    tree.unlock(receipt)
    with pytest.raises(ValueError, match="drop_host: the root holds nothing to drop"):
        tree.drop_host(tree.root, Component.FULL)
    tree.check_integrity()
