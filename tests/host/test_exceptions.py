"""Real exceptions inside transfers, and locks that must have owners.

Any exception inside a copy is a failed transfer: locks released, host and device pages and
slots freed, in-flight counters back to zero — then a copy error (RuntimeError, OSError,
MemoryError, TransferFault) is swallowed (the request recomputes) and a programming error is
re-raised. `check_integrity` cross-checks every lock receipt against its owner, so a leak
fails it.
"""

from __future__ import annotations

import numpy as np
import pytest

from host.host_harness import PAGE, harness, seq
from kvledger.host.movers import TensorMover
from kvledger.host.policy import BackupPolicy
from kvledger.host.results import BackupOutcome, LoadStatus
from kvledger.host.transfers import InFlight
from kvledger.pools.errors import IntegrityError


class Raising(TensorMover):
    """Copies the KV runs, then raises `error` (a copy that dies midway)."""

    def __init__(self, device, host, error, direction):
        super().__init__(device, host)
        self.error, self.direction, self.armed = error, direction, True

    def _maybe_raise(self, direction):
        if self.armed and direction == self.direction:
            self.armed = False
            raise self.error

    def backup(self, moves, checkpoint):
        super().backup(moves, checkpoint)
        self._maybe_raise("backup")

    def loadback(self, moves, checkpoint):
        super().loadback(moves, checkpoint)
        self._maybe_raise("loadback")


def _raising(error, direction):
    return lambda d, g: Raising(d, g, error, direction)


def _assert_clean(h):
    ctrl = h.ctrl
    assert not ctrl.transfers.flights and not h.tree.receipts
    assert ctrl.inflight == InFlight()
    ctrl.check_integrity(request_receipts=[])


@pytest.mark.parametrize("synchronous", [True, False])
def test_a_runtime_error_in_a_backup_is_a_failed_backup(synchronous):
    error = RuntimeError("CUDA error: an illegal memory access was encountered")
    h = harness(mover=_raising(error, "backup"), synchronous=synchronous)
    node = h.insert(seq(0, 2)).node
    if not synchronous:
        assert node.full.lock_ref == 1 and h.ctrl.inflight.host_tokens == 8  # in flight
        assert h.ctrl.poll() == 1  # swallowed: the copy failed, nothing is recorded
    assert node.full.host_value is None and node.full.lock_ref == 0
    assert h.ctrl.host.sizes().kv_used_tokens == 0 and h.ctrl.host.sizes().state_used_slots == 0
    assert h.ctrl.queue.num_failed == 1 and h.ctrl.queue.last_error is error
    _assert_clean(h)
    h.ctrl.backup(node)  # the next attempt works
    h.ctrl.poll()
    assert node.full.host_value is not None
    _assert_clean(h)


@pytest.mark.parametrize("synchronous", [True, False])
def test_a_runtime_error_in_a_loadback_frees_its_pages_and_its_host_lock(synchronous):
    h = harness(mover=_raising(OSError("pinned memory unavailable"), "loadback"),
                synchronous=synchronous)
    tokens = np.r_[seq(0, 2), seq(500, 1)]
    h.insert(seq(0, 2))
    h.insert(tokens)
    h.ctrl.poll()
    h.ctrl.evict_device(full_tokens=PAGE)
    free_pages = h.ctrl.device.token_allocator.available_tokens
    free_slots = h.ctrl.device.state_allocator.num_free
    match = h.tree.match_prefix(tokens)
    res = h.ctrl.loadback(match)
    if not synchronous:
        assert res.status is LoadStatus.QUEUED
        assert match.best_match_node.full.host_lock_ref == 1
        h.ctrl.poll()
    else:
        assert res.status is LoadStatus.FAILED
    assert match.best_match_node.full.host_lock_ref == 0
    assert match.best_match_node.full.value is None
    assert h.ctrl.device.token_allocator.available_tokens == free_pages
    assert h.ctrl.device.state_allocator.num_free == free_slots
    _assert_clean(h)


@pytest.mark.parametrize("synchronous", [True, False])
def test_a_programming_error_cleans_up_then_propagates(synchronous):
    h = harness(mover=_raising(TypeError("bad index dtype"), "backup"),
                synchronous=synchronous)
    if synchronous:
        with pytest.raises(TypeError, match="bad index dtype"):
            h.insert(seq(0, 2))
    else:
        h.insert(seq(0, 2))
        with pytest.raises(TypeError, match="bad index dtype"):
            h.ctrl.poll()
    assert h.ctrl.queue.num_failed == 1 and h.ctrl.queue.num_pending == 0
    assert h.ctrl.host.sizes().kv_used_tokens == 0
    _assert_clean(h)


def test_an_error_while_making_host_room_releases_the_anchor_lock():
    h = harness(host_pages=2)
    shared = h.insert(seq(0, 2)).node  # the host is now full
    assert shared.full.host_value is not None

    def broken(num_tokens, num_slots):
        raise KeyError("host LRU")

    h.ctrl.make_host_room = broken
    with pytest.raises(KeyError):
        h.insert(np.r_[seq(0, 2), seq(500, 1)])
    assert shared.full.host_lock_ref == 0 and not h.tree.receipts
    h.ctrl.check_integrity()


def test_host_full_releases_the_anchor_host_lock():
    # The anchor (the backed-up parent) is host-locked while the backup looks for room; when
    # none can be made (the only host pages are pinned by a queued loadback), it is released.
    h = harness(host_pages=3, host_state_slots=2, synchronous=False)
    other = h.insert(seq(100, 1)).node  # least recently used
    shared = h.insert(seq(0, 2)).node
    h.ctrl.poll()
    h.ctrl.evict_device(full_tokens=PAGE)  # `other` leaves the device, stays on host
    assert other.full.value is None
    loading = h.ctrl.loadback(h.tree.match_prefix(seq(100, 1)))  # pins `other` on host
    assert loading.status is LoadStatus.QUEUED
    child = h.insert(np.r_[seq(0, 2), seq(500, 1)]).node
    assert h.ctrl.backup(child) is BackupOutcome.HOST_FULL
    assert shared.full.host_lock_ref == 0 and child.full.lock_ref == 0
    assert {r.node for r in h.tree.receipts.values()} == {other}  # the loadback's only
    h.ctrl.check_integrity(request_receipts=[])
    h.ctrl.poll()
    _assert_clean(h)


def test_a_leaked_host_lock_fails_the_integrity_check():
    h = harness()
    node = h.insert(seq(0, 2)).node
    h.ctrl.check_integrity()
    leaked = h.tree.lock_host(node)
    with pytest.raises(IntegrityError, match="has no owner"):
        h.ctrl.check_integrity()
    h.tree.unlock(leaked)
    h.ctrl.check_integrity()


def test_device_locks_are_checked_against_the_requests_that_own_them():
    h = harness()
    node = h.insert(seq(0, 2)).node
    receipt = h.tree.lock(node)  # a running request's lock
    h.ctrl.check_integrity()  # owners unknown: only host locks are checked
    h.ctrl.check_integrity(request_receipts=[receipt])
    with pytest.raises(IntegrityError, match=r"1 device lock\(s\) have no owner"):
        h.ctrl.check_integrity(request_receipts=[])
    h.tree.unlock(receipt)
    with pytest.raises(IntegrityError, match="no longer outstanding"):
        h.ctrl.check_integrity(request_receipts=[receipt])


def test_in_flight_counters_must_equal_the_transfers_in_flight():
    h = harness(synchronous=False)
    h.insert(seq(0, 2))
    h.ctrl.check_integrity()  # one backup in flight, its 8 host tokens counted
    h.ctrl.inflight.add_host(PAGE, 0)
    with pytest.raises(IntegrityError):
        h.ctrl.check_integrity()


def _raising_on_call(obj, name, error, call):
    real, calls = getattr(obj, name), []

    def wrapper(*args, **kwargs):
        calls.append(1)
        if len(calls) == call:
            raise error
        return real(*args, **kwargs)

    setattr(obj, name, wrapper)
    return calls


@pytest.mark.parametrize("error", [ValueError("injected"), KeyboardInterrupt()],
                         ids=["ValueError", "KeyboardInterrupt"])
@pytest.mark.parametrize("call", [1, 2, 3], ids=["first node", "second node", "state"])
def test_an_error_recording_a_backup_frees_what_the_tree_did_not_take(error, call):
    """One backup of two nodes (a parent and its child) and the child's state, recorded
    root-first; an error at any record (the copy already landed) keeps what was recorded
    and frees the rest."""
    h = harness(policy=BackupPolicy.WRITE_BACK)  # nothing is backed up until asked
    h.insert(seq(0, 2))
    child = h.insert(np.r_[seq(0, 2), seq(500, 1)]).node
    assert child.parent.parent is not None and child.parent.full.host_value is None
    calls = _raising_on_call(h.tree, "set_host_value", error, call)
    with pytest.raises(type(error)):
        h.ctrl.backup(child)
    assert len(calls) == call
    recorded = h.ctrl.host.sizes()
    assert recorded.kv_used_tokens == {1: 0, 2: 2 * PAGE, 3: 3 * PAGE}[call]
    assert recorded.state_used_slots == 0
    assert child.mamba.host_value is None
    _assert_clean(h)


@pytest.mark.parametrize("error", [ValueError("injected"), KeyboardInterrupt()],
                         ids=["ValueError", "KeyboardInterrupt"])
@pytest.mark.parametrize("call", [1, 2], ids=["KV", "state"])
def test_an_error_recording_a_loadback_frees_what_the_tree_did_not_take(error, call):
    h = harness()
    tokens = seq(0, 2)
    node = h.insert(tokens).node
    h.ctrl.evict_device(full_tokens=2 * PAGE)
    free_pages = h.ctrl.device.token_allocator.available_tokens
    free_slots = h.ctrl.device.state_allocator.num_free
    _raising_on_call(h.tree, "restore_device_value", error, call)
    with pytest.raises(type(error)):
        h.ctrl.loadback(h.tree.match_prefix(tokens))
    kept = 0 if call == 1 else 2 * PAGE  # the KV recorded before the state failed stays
    assert h.ctrl.device.token_allocator.available_tokens == free_pages - kept
    assert h.ctrl.device.state_allocator.num_free == free_slots
    assert node.mamba.value is None and (node.full.value is None) == (call == 1)
    _assert_clean(h)
