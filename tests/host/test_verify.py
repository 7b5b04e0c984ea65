"""Transfers that cannot lie: every loadback's device bytes are checked against digests taken
at backup, keyed by the prefix each page holds, before the loadback is acknowledged.

Each fault below is one a copy path can really have; with verification on the loadback is
FAILED (the request recomputes from its device hit, nothing leaks) and with `verify=False`
the same fault is acknowledged as LOADED while the device holds wrong bytes — the harness's
truth check then fails, which shows each fault is real and only the digests catch it.
"""

from __future__ import annotations

import numpy as np
import pytest

from host.host_harness import PAGE, harness, seq
from kvledger.host.movers import TensorMover
from kvledger.host.results import LoadStatus
from kvledger.pools.errors import IntegrityError
from kvledger.tree import Tier


class WrongPlacement(TensorMover):
    """Writes host page i to the device page meant for page i + 1 (and the last to the first)."""

    def loadback(self, moves, checkpoint):
        pages = moves.kv_device.reshape(-1, PAGE)
        super().loadback(moves._replace(kv_device=np.roll(pages, 1, axis=0).ravel()), checkpoint)


class Skipping(TensorMover):
    """Loads back every part but one: "kv", "index" or "state"."""

    def __init__(self, device, host, skip):
        super().__init__(device, host)
        self.skip = skip

    def loadback(self, moves, checkpoint):
        host, dev = self.host, self.device
        if len(moves.kv_host):
            runs = host._runs(moves.kv_device, moves.kv_host)
            if self.skip != "kv":
                host.kv.loadback(dev, runs, checkpoint)
            if self.skip != "index":
                host.indexer.loadback(dev, runs, checkpoint)
        if len(moves.state_host) and self.skip != "state":
            host.state.loadback(dev, moves.state_host, moves.state_device, checkpoint)


def _evicted_tail(h):
    """Two pages shared on device, two tail pages (and the tail's state) on host only."""
    shared, tail = seq(0, 2), seq(500, 2)
    h.insert(shared)
    h.insert(np.r_[shared, tail])
    h.ctrl.evict_device(full_tokens=2 * PAGE)
    tokens = np.r_[shared, tail]
    match = h.tree.match_prefix(tokens)
    assert (match.device_hit_length, match.host_hit_length) == (8, 8)
    h.scramble_free_pages()  # free pages hold noise, not yesterday's bytes
    return tokens, match


def _assert_refused(h, tokens, match, res):
    assert res.status is LoadStatus.FAILED and res.node is match.last_device_node
    assert res.hit_tokens == 8  # recompute from the device hit
    h.check_bytes(tokens, res.device_indices, res.mamba_slot)
    assert h.ctrl.transfers.digests.mismatches == 1
    assert not h.ctrl.transfers.flights and not h.tree.receipts
    assert h.ctrl.device.token_allocator.available_tokens == 24 * PAGE - 8
    h.ctrl.check_integrity()


@pytest.mark.parametrize("kind", ["dsa", "gqa"])
def test_loadback_to_the_wrong_device_pages_is_refused(kind):
    h = harness(kind=kind, mover=WrongPlacement)
    tokens, match = _evicted_tail(h)
    _assert_refused(h, tokens, match, h.ctrl.loadback(match))


def test_without_verification_the_wrong_placement_is_acknowledged_and_wrong():
    h = harness(mover=WrongPlacement, verify=False)
    tokens, match = _evicted_tail(h)
    res = h.ctrl.loadback(match)
    assert res.status is LoadStatus.LOADED and not h.ctrl.verifying
    with pytest.raises(AssertionError, match="KV plane 0 differs"):
        h.check_bytes(tokens, res.device_indices, res.mamba_slot)


@pytest.mark.parametrize("skip", ["kv", "index", "state"])
def test_a_skipped_copy_is_refused(skip):
    h = harness(mover=lambda d, g: Skipping(d, g, skip))
    tokens, match = _evicted_tail(h)
    _assert_refused(h, tokens, match, h.ctrl.loadback(match))


@pytest.mark.parametrize("skip, error", [("index", "index layer 0"),
                                         ("state", "conv state differs")])
def test_without_verification_a_skipped_copy_is_wrong(skip, error):
    h = harness(mover=lambda d, g: Skipping(d, g, skip), verify=False)
    tokens, match = _evicted_tail(h)
    res = h.ctrl.loadback(match)
    assert res.status is LoadStatus.LOADED
    with pytest.raises(AssertionError, match=error):
        h.check_bytes(tokens, res.device_indices, res.mamba_slot)


def _swapped_pair(h):
    """Two backed-up one-node prefixes evicted from device, their host pages swapped: each
    host copy is intact, and holds the other prefix."""
    a, b = h.insert(seq(0, 2)).node, h.insert(seq(100, 2)).node
    h.ctrl.evict_device(full_tokens=4 * PAGE)
    a.full.values[Tier.HOST], b.full.values[Tier.HOST] = b.full.host_value, a.full.host_value
    h.scramble_free_pages()
    return a


def test_swapped_host_indices_are_refused_and_seen_by_the_integrity_check():
    h = harness()
    _swapped_pair(h)
    with pytest.raises(IntegrityError, match="does not hold a backup of this prefix"):
        h.ctrl.check_integrity()
    match = h.tree.match_prefix(seq(0, 2))
    res = h.ctrl.loadback(match)
    assert res.status is LoadStatus.FAILED and res.hit_tokens == 0
    assert h.ctrl.transfers.digests.mismatches == 1


def test_without_verification_swapped_indices_load_another_prefix():
    h = harness(verify=False)
    _swapped_pair(h)
    h.ctrl.check_integrity()  # every count adds up: only the prefix keys tell
    res = h.ctrl.loadback(h.tree.match_prefix(seq(0, 2)))
    assert res.status is LoadStatus.LOADED
    with pytest.raises(AssertionError, match="KV plane 0 differs"):
        h.check_bytes(seq(0, 2), res.device_indices, None)


def test_a_corrupted_host_state_slot_is_refused():
    h = harness()
    tokens, match = _evicted_tail(h)
    slot = match.best_match_node.mamba.host_value
    h.ctrl.host.state.temporal[slot].view(-1)[0] ^= 0xFF  # one byte of one layer's state
    _assert_refused(h, tokens, match, h.ctrl.loadback(match))


def test_a_corrupted_host_index_key_page_is_refused():
    h = harness()
    tokens, match = _evicted_tail(h)
    page = int(match.best_match_node.full.host_value[-1]) // PAGE
    h.ctrl.host.indexer.canonical[page, 0, 0] ^= 0x01  # one bit of the first layer's keys
    _assert_refused(h, tokens, match, h.ctrl.loadback(match))


def test_an_intact_loadback_is_verified_and_loaded():
    h = harness()
    tokens, match = _evicted_tail(h)
    res = h.ctrl.loadback(match)
    assert res.status is LoadStatus.LOADED
    h.check_bytes(tokens, res.device_indices, res.mamba_slot)
    digests = h.ctrl.transfers.digests
    assert (digests.verified_pages, digests.verified_states, digests.mismatches) == (2, 1, 0)
    h.ctrl.check_integrity()


def _refuse_once(h, corrupt):
    """The evicted tail, one host byte corrupted by `corrupt(tail_node)`, loaded back: FAILED."""
    tokens, match = _evicted_tail(h)
    tail = match.best_match_node
    corrupt(tail)
    used = h.ctrl.host.sizes()
    _assert_refused(h, tokens, match, h.ctrl.loadback(match))
    return tokens, tail, used


def _flip_kv(h, tail):
    page = int(tail.full.host_value[-1]) // PAGE
    h.ctrl.host.kv.canonical[page, 0, 0, 0] ^= 0x01  # one bit of one plane's first row


def test_a_host_page_that_failed_verification_is_dropped_with_its_node():
    h = harness()
    tokens, tail, used = _refuse_once(h, lambda tail: _flip_kv(h, tail))
    # The tail was host-only: its 2 host pages and host state are freed, the node removed.
    assert not tail.alive
    after = h.ctrl.host.sizes()
    assert used.kv_used_tokens - after.kv_used_tokens == 2 * PAGE
    assert used.state_used_slots - after.state_used_slots == 1
    traffic = h.ctrl.traffic
    assert (traffic.host_evicted_tokens, traffic.host_evicted_state_slots) == (2 * PAGE, 1)
    # The next request stops at the device hit instead of loading the bad copy again.
    match = h.tree.match_prefix(tokens)
    assert (match.device_hit_length, match.host_hit_length) == (8, 0)
    assert h.ctrl.loadback(match).status is LoadStatus.DEVICE_HIT
    assert h.ctrl.transfers.digests.mismatches == 1
    h.ctrl.check_integrity()


def test_a_host_state_that_failed_verification_is_dropped_alone():
    h = harness()

    def flip_state(tail):
        h.ctrl.host.state.temporal[tail.mamba.host_value].view(-1)[0] ^= 0xFF

    tokens, tail, used = _refuse_once(h, flip_state)
    assert tail.alive and tail.mamba.host_value is None  # the KV's host copy was fine: kept
    assert len(tail.full.host_value) == 2 * PAGE
    after = h.ctrl.host.sizes()
    assert (used.kv_used_tokens - after.kv_used_tokens,
            used.state_used_slots - after.state_used_slots) == (0, 1)
    assert h.tree.match_prefix(tokens).best_match_node is not tail  # no state there to use
    h.ctrl.check_integrity()


def test_a_refused_copy_another_transfer_reads_is_dropped_after_that_one():
    h = harness(synchronous=False)
    shared, tail_tokens = seq(0, 2), seq(500, 2)
    for tokens in (shared, np.r_[shared, tail_tokens]):
        h.insert(tokens)
        h.ctrl.poll()  # write-through backups acknowledged
    h.ctrl.evict_device(full_tokens=2 * PAGE)
    match = h.tree.match_prefix(np.r_[shared, tail_tokens])
    tail = match.best_match_node
    _flip_kv(h, tail)
    # Two requests load the same prefix back: both queued, both host-lock the tail.
    first, second = h.ctrl.loadback(match), h.ctrl.loadback(match)
    assert first.status is second.status is LoadStatus.QUEUED
    assert h.ctrl.queue.poll(1) == 1  # the first is refused; the second still reads the copy
    assert h.ctrl.transfers.digests.mismatches == 1
    assert tail.alive and tail.full.host_value is not None  # not dropped under a lock
    h.ctrl.check_integrity()
    assert h.ctrl.poll() == 1  # the second is refused too, and now the copy goes
    assert h.ctrl.transfers.digests.mismatches == 2 and not tail.alive
    assert not h.ctrl.transfers.flights and not h.tree.receipts
    h.ctrl.check_integrity()
