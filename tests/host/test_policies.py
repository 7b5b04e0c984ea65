"""Write policies: when each backs up, and what each keeps on host for the same sequence.

Hit counting follows SGLang's HiRadixCache `inc_hit_count`: an insert counts as a hit on
every node of its path; write_through backs up at 1 hit, write_through_selective at 2
(`write_through_threshold`), write_back only when eviction takes the node.
"""

from __future__ import annotations

import numpy as np
import pytest

from host.host_harness import PAGE, harness, seq
from kvledger.host.policy import BackupPolicy
from kvledger.host.results import BackupOutcome
from kvledger.tree import Tier


def host_tokens(h) -> int:
    return h.tree.sizes(Tier.HOST).full_tokens


def host_states(h) -> int:
    return h.tree.sizes(Tier.HOST).mamba_slots


def test_write_through_backs_up_at_first_insert():
    h = harness(policy=BackupPolicy.WRITE_THROUGH)
    result = h.insert(seq(0, 2))
    assert result.node.full.host_value is not None and result.node.mamba.host_value is not None
    assert (host_tokens(h), host_states(h)) == (8, 1)
    assert h.ctrl.host.sizes().kv_used_tokens == 8


def test_selective_backs_up_at_second_hit():
    h = harness(policy=BackupPolicy.WRITE_THROUGH_SELECTIVE)
    tokens = seq(0, 2)
    node = h.insert(tokens).node
    assert (host_tokens(h), host_states(h)) == (0, 0)  # one hit: not due
    assert h.ctrl.on_hit(node) is BackupOutcome.BACKED_UP
    assert (host_tokens(h), host_states(h)) == (8, 1)
    assert h.ctrl.on_hit(node) is BackupOutcome.ALREADY


def test_selective_counts_shared_prefixes_on_every_insert():
    # Two requests share 2 pages: after the second insert the shared node has 2 hits and is
    # backed up; each private suffix has 1 and is not.
    h = harness(policy=BackupPolicy.WRITE_THROUGH_SELECTIVE)
    shared = seq(0, 2)
    h.insert(np.r_[shared, seq(100, 1)])
    top = h.insert(np.r_[shared, seq(200, 1)]).node.parent  # split off by the second insert
    assert top.num_tokens == 8 and top.full.host_value is not None
    assert host_tokens(h) == 8
    assert host_states(h) == 0  # the split-created shared node has no state of its own


def test_write_back_backs_up_only_at_eviction():
    h = harness(policy=BackupPolicy.WRITE_BACK)
    node = h.insert(seq(0, 2)).node
    assert h.ctrl.on_hit(node) is BackupOutcome.NOT_DUE
    assert (host_tokens(h), host_states(h)) == (0, 0)
    freed = h.ctrl.evict_device(full_tokens=1)
    assert (freed.num_full_tokens, freed.num_mamba_slots) == (8, 1)
    assert node.alive and node.full.value is None  # kept as a host-only node
    assert (host_tokens(h), host_states(h)) == (8, 1)


def test_write_back_backs_up_a_state_before_a_state_eviction():
    h = harness(policy=BackupPolicy.WRITE_BACK)
    node = h.insert(seq(0, 2)).node
    h.insert(seq(0, 3))  # node becomes internal with its own state
    freed = h.ctrl.evict_device(mamba_slots=1)  # oldest state: node's (a tombstone)
    assert freed.mamba_slots.size == 1 and node.mamba.value is None
    assert node.mamba.host_value is not None and node.full.value is not None
    assert node.full.host_value is not None  # its KV went first: a host state needs host KV
    h.ctrl.check_integrity()


@pytest.mark.parametrize(("policy", "kept_tokens", "kept_states"), [
    (BackupPolicy.WRITE_THROUGH, 6 * PAGE, 2),  # everything inserted
    (BackupPolicy.WRITE_THROUGH_SELECTIVE, 0, 0),  # nothing hit twice
    (BackupPolicy.WRITE_BACK, 2 * PAGE, 1),  # only what eviction took (the older request)
])
def test_same_sequence_different_host_contents(policy, kept_tokens, kept_states):
    # Two unrelated requests, then eviction of the least recent one.
    h = harness(policy=policy)
    old = h.insert(seq(0, 2)).node
    new = h.insert(seq(100, 4)).node
    h.ctrl.evict_device(full_tokens=2 * PAGE)
    assert old.full.value is None and new.full.value is not None
    assert (host_tokens(h), host_states(h)) == (kept_tokens, kept_states)
    assert old.alive is (policy is not BackupPolicy.WRITE_THROUGH_SELECTIVE)
    h.ctrl.check_integrity()


def test_backup_goes_ancestors_first():
    # Selective: the deep node is hit twice and backed up; its never-backed-up ancestor goes
    # first, in the same transfer.
    h = harness(policy=BackupPolicy.WRITE_THROUGH_SELECTIVE)
    parent_tokens = seq(0, 2)
    h.insert(parent_tokens)
    deep = h.insert(np.r_[parent_tokens, seq(500, 1)]).node  # parent now has 2 hits
    parent = deep.parent
    assert parent.full.host_value is not None and deep.full.host_value is None
    assert h.ctrl.on_hit(deep) is BackupOutcome.BACKED_UP
    assert deep.full.host_value is not None
    h.ctrl.check_integrity()


def test_backed_up_node_that_gains_a_state_gets_an_incremental_state_backup():
    h = harness(policy=BackupPolicy.WRITE_THROUGH)
    shared = seq(0, 2)
    h.insert(np.r_[shared, seq(100, 1)])
    top = h.insert(np.r_[shared, seq(200, 1)]).node.parent  # split: no state of its own
    assert top.full.host_value is not None and top.mamba.value is None
    pages_before = h.ctrl.host.sizes().kv_used_tokens
    h.insert(shared)  # a request ending exactly there leaves a state on the node
    assert top.mamba.value is not None and top.mamba.host_value is not None
    assert h.ctrl.host.sizes().kv_used_tokens == pages_before  # the state alone was copied
    assert host_states(h) == 3
    h.ctrl.check_integrity()


def test_queued_backup_holds_the_device_lock_until_acknowledged():
    h = harness(policy=BackupPolicy.WRITE_THROUGH, synchronous=False)
    node = h.insert(seq(0, 2)).node
    assert node.full.lock_ref == 1 and node.mamba.lock_ref == 1
    assert node.full.host_value is None  # nothing recorded before the acknowledgement
    assert h.ctrl.evict_device(full_tokens=8).num_full_tokens == 0  # pinned while in flight
    h.ctrl.check_integrity()  # 8 host tokens in flight, none resident
    assert h.ctrl.poll() == 1
    assert node.full.lock_ref == 0 and node.full.host_value is not None
    assert h.ctrl.evict_device(full_tokens=8).num_full_tokens == 8
    h.ctrl.check_integrity()


def test_queued_loadback_pins_host_copies_until_acknowledged():
    h = harness(policy=BackupPolicy.WRITE_THROUGH, synchronous=False)
    tokens = seq(0, 2)
    node = h.insert(tokens).node
    h.ctrl.poll()
    h.ctrl.evict_device(full_tokens=8)
    res = h.ctrl.loadback(h.tree.match_prefix(tokens))
    assert res.status.name == "QUEUED" and res.hit_tokens == 0
    assert node.full.host_lock_ref == 1 and node.mamba.host_lock_ref == 1
    assert h.ctrl.evict_host(full_tokens=8).num_full_tokens == 0  # host copy pinned
    h.ctrl.check_integrity()
    h.ctrl.poll()
    assert node.full.host_lock_ref == 0 and node.full.value is not None
    match = h.tree.match_prefix(tokens)
    h.check_bytes(tokens, match.device_indices, match.mamba_src_slot)
    h.ctrl.check_integrity()
