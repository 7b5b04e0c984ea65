"""A loadback that writes beside its own pages: what the device side guarantees, and where it stops.

The loadback below is correct — every page and state it was asked to write holds the right
bytes, so the digests of `test_verify.py` pass — but its copy also writes one byte past its
last page (or state slot), into another node's. The guard (`kvledger.host.neighbours`)
snapshots the pages and slots beside each run before the copy: a change there is put back,
counted, and fails the loadback, so the other node's next hit reads what was cached. A
write two pages away is the documented limit: not seen, and the other node's bytes are
wrong (the harness's truth check says so, as the engine's logits would).
"""

from __future__ import annotations

import numpy as np
import pytest

from host.host_harness import PAGE, harness, seq
from kvledger.host.movers import TensorMover
from kvledger.host.neighbours import NeighbourGuard, neighbours
from kvledger.host.results import LoadStatus


class Overrunning(TensorMover):
    """Loads back correctly, then flips one byte `distance` pages past the last device page
    it wrote (part "kv": the first row of the last KV plane; "index": the first index-key
    layer) or `distance` slots past the last state slot ("state": the temporal part)."""

    def __init__(self, device, host, part, distance):
        super().__init__(device, host)
        self.part, self.distance, self.hit = part, distance, None

    def loadback(self, moves, checkpoint):
        super().loadback(moves, checkpoint)
        if self.hit is not None:
            return  # once
        dev = self.device
        if self.part == "state":
            self.hit = int(moves.state_device.max()) + self.distance
            dev.temporal[0, self.hit, 0] ^= 0xFF
            return
        self.hit = int(moves.kv_device.max()) // PAGE + self.distance
        if self.part == "kv":
            dev.kv_planes[-1][self.hit * PAGE, 0] ^= 0xFF
        else:
            dev.index_pages[0][self.hit, 0] ^= 0xFF


def _loaded_back_beside_another(part, distance, *, verify=True, numpy_views=None):
    """A (pages 1, 2, state 1) and B (pages 3, 4, state 2) cached; A evicted from device and
    loaded back into pages 2, 1 and slot 1 by the overrunning mover. Returns the harness,
    the loadback's result and B."""
    h = harness(mover=lambda d, g: Overrunning(d, g, part, distance), verify=verify)
    if numpy_views is not None:
        h.ctrl.transfers.neighbours = NeighbourGuard(h.dev, numpy_views=numpy_views)
    a = h.insert(seq(0, 2)).node
    b = h.insert(seq(100, 2)).node
    assert (a.full.value[::PAGE] // PAGE).tolist() == [1, 2] and a.mamba.value == 1
    assert (b.full.value[::PAGE] // PAGE).tolist() == [3, 4] and b.mamba.value == 2
    h.ctrl.evict_device(full_tokens=2 * PAGE)  # A, the least recently used
    assert a.full.value is None and a.full.host_value is not None
    res = h.ctrl.loadback(h.tree.match_prefix(seq(0, 2)))
    mover = h.ctrl.transfers.mover
    owned = b.mamba.value if part == "state" else b.full.value[::PAGE] // PAGE
    assert mover.hit in np.atleast_1d(owned)  # the byte landed in B's page or state
    return h, res, b


@pytest.mark.parametrize("numpy_views", [None, False], ids=["numpy", "torch"])
@pytest.mark.parametrize("part", ["kv", "index", "state"])
def test_a_write_beside_a_loadback_is_put_back_and_the_loadback_refused(part, numpy_views):
    """numpy views are the CPU's path; the torch path (any device) runs here on the CPU."""
    h, res, b = _loaded_back_beside_another(part, distance=1, numpy_views=numpy_views)
    assert res.status is LoadStatus.FAILED and res.hit_tokens == 0  # the request recomputes
    guard = h.ctrl.transfers.neighbours
    assert (guard.stray_pages, guard.stray_states) == ((0, 1) if part == "state" else (1, 0))
    assert h.ctrl.transfers.digests.mismatches == 0  # A's own pages were right
    h.check_all_bytes()  # B holds its cached bytes again
    h.check_bytes(seq(100, 2), b.full.value, b.mamba.value)
    assert not h.ctrl.transfers.flights and not h.tree.receipts
    h.ctrl.check_integrity()
    # A's host copy was not at fault: kept, and the next loadback (the mover fires once) loads it.
    again = h.ctrl.loadback(h.tree.match_prefix(seq(0, 2)))
    assert again.status is LoadStatus.LOADED and again.hit_tokens == 2 * PAGE
    h.check_all_bytes()
    h.ctrl.check_integrity()


@pytest.mark.parametrize("part", ["kv", "state"])
def test_without_verification_the_write_beside_reaches_the_other_node(part):
    h, res, b = _loaded_back_beside_another(part, distance=1, verify=False)
    assert res.status is LoadStatus.LOADED and h.ctrl.transfers.neighbours is None
    with pytest.raises(AssertionError, match="temporal" if part == "state" else "KV plane"):
        h.check_bytes(seq(100, 2), b.full.value, b.mamba.value)


def test_a_write_two_pages_away_is_the_documented_limit():
    """Page 4 is B's, two pages past the run {1, 2}: no neighbour of the loadback. The
    loadback is acknowledged and B's next hit would read the changed byte."""
    h, res, b = _loaded_back_beside_another("kv", distance=2)
    assert res.status is LoadStatus.LOADED
    assert h.ctrl.transfers.neighbours.stray_pages == 0
    with pytest.raises(AssertionError, match="KV plane 2 differs"):  # the last of the 3 planes
        h.check_bytes(seq(100, 2), b.full.value, b.mamba.value)


def test_an_intact_loadback_leaves_every_neighbour_as_it_was():
    h = harness()
    h.insert(seq(0, 2))
    h.insert(seq(100, 2))
    h.ctrl.evict_device(full_tokens=2 * PAGE)
    before = [plane.clone() for plane in h.dev.kv_planes]
    res = h.ctrl.loadback(h.tree.match_prefix(seq(0, 2)))
    assert res.status is LoadStatus.LOADED
    guard = h.ctrl.transfers.neighbours
    assert (guard.stray_pages, guard.stray_states) == (0, 0)
    written = set((res.device_indices[::PAGE] // PAGE).tolist())
    assert written == {1, 2}
    for plane, old in zip(h.dev.kv_planes, before, strict=True):
        pages, old_pages = plane.view(-1, PAGE, plane.shape[1]), old.view(-1, PAGE, old.shape[1])
        for page in range(pages.shape[0]):
            if page not in written:
                assert bool((pages[page] == old_pages[page]).all()), page
    h.check_all_bytes()


def test_the_neighbours_are_the_ids_beside_each_run_within_the_pool():
    assert neighbours(np.array([3, 4, 7]), 10).tolist() == [2, 5, 6, 8]
    assert neighbours(np.array([0, 9]), 10).tolist() == [1, 8]  # none outside 0..9
    assert neighbours(np.array([1, 2, 3]), 4).tolist() == [0]
    assert neighbours(np.zeros(0, dtype=np.int64), 10).tolist() == []
