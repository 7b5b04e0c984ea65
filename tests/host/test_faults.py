"""Faults: a full host, and transfers that fail midway, leave both tiers consistent.

Each test checks the three promises: nothing half-written is recorded, no slot leaks
(`check_integrity` compares what the tree references with what the pools hand out), and a
request whose loadback failed falls back to recomputation from its device hit.
"""

from __future__ import annotations

import numpy as np
import pytest

from host.host_harness import PAGE, harness, seq
from kvledger.host.policy import BackupPolicy
from kvledger.host.results import BackupOutcome, LoadStatus
from kvledger.host.transfer import Direction, fail_at_step
from kvledger.tree import Tier


def test_host_full_evicts_host_lru_to_make_room():
    h = harness(host_pages=4, host_state_slots=2)
    old = h.insert(seq(0, 2)).node
    mid = h.insert(seq(100, 2)).node
    assert h.ctrl.host.sizes().kv_free_tokens == 0
    new = h.insert(seq(200, 2)).node  # host full: the least recently used host leaf goes
    assert old.full.host_value is None and old.mamba.host_value is None
    assert mid.full.host_value is not None and new.full.host_value is not None
    h.ctrl.check_integrity()


def test_host_full_of_pinned_copies_skips_the_backup():
    h = harness(host_pages=2, host_state_slots=2, synchronous=False)
    first = h.insert(seq(0, 2)).node
    h.ctrl.poll()
    h.ctrl.evict_device(full_tokens=8)
    loading = h.ctrl.loadback(h.tree.match_prefix(seq(0, 2)))  # host lock until acked
    assert loading.status is LoadStatus.QUEUED
    second = h.insert(seq(100, 2))
    # The only host pages hold a pinned copy: the backup is skipped, never a crash.
    assert h.ctrl.backup(second.node) is BackupOutcome.HOST_FULL
    assert second.node.full.host_value is None and first.full.host_value is not None
    h.ctrl.check_integrity()
    h.ctrl.poll()
    h.ctrl.check_integrity()


@pytest.mark.parametrize("step", [0, 1, 2, 3])
def test_backup_failing_midway_records_nothing_and_frees_everything(step):
    # Steps: KV runs, then index-key runs, then the state run; fail at each in turn.
    h = harness(fault=fail_at_step(step, Direction.BACKUP))
    result = h.insert(seq(0, 2))
    node = result.node
    assert node.full.host_value is None and node.mamba.host_value is None
    assert h.ctrl.queue.num_failed == 1
    sizes = h.ctrl.host.sizes()
    assert (sizes.kv_used_tokens, sizes.state_used_slots) == (0, 0)
    assert node.full.lock_ref == 0  # the device lock was released on the failed ack
    h.ctrl.check_integrity()
    assert h.ctrl.backup(node) is BackupOutcome.BACKED_UP  # the fault fired once; retry works
    h.ctrl.check_integrity()


@pytest.mark.parametrize("step", [0, 1, 2, 3])
def test_loadback_failing_midway_falls_back_to_recompute(step):
    h = harness(fault=fail_at_step(step, Direction.LOADBACK))
    shared, tail = seq(0, 2), seq(500, 1)
    h.insert(shared)
    h.insert(np.r_[shared, tail])
    h.ctrl.evict_device(full_tokens=PAGE)  # only the tail leaves the device
    device_before = h.ctrl.device.token_allocator.available_tokens
    states_before = h.ctrl.device.state_allocator.num_free
    match = h.tree.match_prefix(np.r_[shared, tail])
    assert (match.device_hit_length, match.host_hit_length) == (8, 4)
    res = h.ctrl.loadback(match, request_slot=None)
    assert res.status is LoadStatus.FAILED and not res.status.usable
    # The request recomputes from its device hit: the shared node and its state.
    assert res.node is match.last_device_node and res.hit_tokens == 8
    assert res.mamba_slot == match.last_device_node.mamba.value
    h.check_bytes(shared, res.device_indices, res.mamba_slot)
    assert h.ctrl.device.token_allocator.available_tokens == device_before
    assert h.ctrl.device.state_allocator.num_free == states_before
    leaf = match.best_match_node
    assert leaf.full.value is None and leaf.full.host_lock_ref == 0
    h.ctrl.check_integrity()
    again = h.ctrl.loadback(h.tree.match_prefix(np.r_[shared, tail]))
    assert again.status is LoadStatus.LOADED
    h.check_bytes(np.r_[shared, tail], again.device_indices, again.mamba_slot)
    h.ctrl.check_integrity()


def test_loadback_without_device_room_recomputes():
    # Everything on device is pinned by a running request: no page can be freed for the
    # loadback, which gives up cleanly.
    h = harness(device_pages=4, device_state_slots=4)
    h.insert(seq(0, 2))
    h.ctrl.evict_device(full_tokens=8)
    running = h.insert(seq(100, 4)).node
    receipt = h.tree.lock(running)
    match = h.tree.match_prefix(seq(0, 2))
    res = h.ctrl.loadback(match)
    assert res.status is LoadStatus.NO_ROOM and res.hit_tokens == 0
    assert match.best_match_node.full.host_lock_ref == 0
    h.ctrl.check_integrity()
    h.tree.unlock(receipt)
    assert h.ctrl.loadback(h.tree.match_prefix(seq(0, 2))).status is LoadStatus.LOADED
    h.ctrl.check_integrity()


def test_write_back_eviction_still_evicts_when_the_backup_fails():
    h = harness(policy=BackupPolicy.WRITE_BACK, fault=fail_at_step(1, Direction.BACKUP))
    node = h.insert(seq(0, 2)).node
    freed = h.ctrl.evict_device(full_tokens=8)
    assert freed.num_full_tokens == 8 and not node.alive  # dropped, nothing on host
    assert h.tree.sizes(Tier.HOST).full_tokens == 0
    h.ctrl.check_integrity()
