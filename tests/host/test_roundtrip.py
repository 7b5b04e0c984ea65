"""Byte-exact round trip: device → host → (device wiped) → device, every layout and policy.

Random bytes go into every device object a prefix owns — latent KV rows (528 B scaled-fp8
rows), index-key pages, conv and temporal state — then the prefix is backed up (when the
policy says), evicted from device, the device memory is overwritten, and a match loads it
back. Every byte is compared, in the tree's slot and in the request's own slot.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from host.host_harness import PAGE, harness, seq
from kvledger.host.layout import HostLayout
from kvledger.host.policy import BackupPolicy
from kvledger.host.results import LoadStatus


def _make_due(h, tokens: np.ndarray, policy: BackupPolicy) -> None:
    """Bring the prefix to the point where its policy has backed it up (or will, on evict)."""
    if policy is BackupPolicy.WRITE_THROUGH_SELECTIVE:
        h.ctrl.on_hit(h.tree.match_prefix(tokens).best_match_node)  # the second hit


@pytest.mark.parametrize("kind", ["dsa", "gqa"])
@pytest.mark.parametrize("policy", list(BackupPolicy))
@pytest.mark.parametrize("layout", list(HostLayout))
def test_round_trip_every_byte(layout, policy, kind):
    h = harness(kind=kind, layout=layout, policy=policy)
    shared, a, b = seq(0, 3), seq(1000, 2), seq(2000, 1)
    first, second = np.r_[shared, a], np.r_[shared, b]
    for tokens in (first, second):
        h.insert(tokens)
        _make_due(h, tokens, policy)
    h.ctrl.check_integrity()
    freed = h.ctrl.evict_device(full_tokens=10**6)  # everything unlocked leaves the device
    assert freed.num_full_tokens == len(shared) + len(a) + len(b)
    assert h.tree.sizes().full_tokens == 0
    h.scramble_free_device_memory()
    h.ctrl.check_integrity()

    for tokens in (first, second):
        match = h.tree.match_prefix(tokens)
        assert (match.device_hit_length, match.host_hit_length) == (0, len(tokens))
        request_slot = int(h.ctrl.device.state_allocator.alloc(1)[0])
        res = h.ctrl.loadback(match, request_slot=request_slot)
        assert res.status is LoadStatus.LOADED and res.hit_tokens == len(tokens)
        assert res.loaded_state and res.request_slot == request_slot
        h.check_bytes(tokens, res.device_indices, res.mamba_slot)
        h.check_bytes(tokens, res.device_indices, request_slot)  # the copy-on-write
        h.ctrl.device.free_states(np.array([request_slot]))
        h.ctrl.check_integrity()
    # The shared prefix came back once: the second loadback stitched only its own suffix.
    assert res.loaded_tokens == len(b)


@pytest.mark.parametrize("layout", list(HostLayout))
def test_host_bytes_are_the_device_bytes_in_layout_order(layout):
    # The canonical (page, plane, token, byte) view of the host page equals the device rows.
    h = harness(layout=layout)
    tokens = seq(0, 2)
    done = h.insert(tokens)
    node = done.node
    host_slots = node.full.host_value
    pages = h.ctrl.host.kv.read_pages(host_slots)  # (2 pages, planes, PAGE, 528)
    assert pages.shape == (2, 3, PAGE, 528)
    for q, plane in enumerate(h.dev.kv_planes):
        want = plane[torch.from_numpy(node.full.value.copy())].view(2, PAGE, 528)
        assert torch.equal(pages[:, q], want)
    index_pages = torch.from_numpy(host_slots[::PAGE] // PAGE)
    for i, layer in enumerate(h.dev.index_pages):
        want = layer[torch.from_numpy(node.full.value[::PAGE] // PAGE)]
        assert torch.equal(h.ctrl.host.indexer.canonical[index_pages, i], want)


def test_fused_page_first_backup_writes_token_major_pages():
    # PAGE_FIRST stores (page, token, plane, byte): token 1 of page 0, plane 2 sits at
    # byte offset (1·3 + 2)·528 of the page block.
    h = harness(layout=HostLayout.PAGE_FIRST)
    node = h.insert(seq(0, 1)).node
    block = h.ctrl.host.kv.buffer[int(node.full.host_value[0]) // PAGE].reshape(-1)
    row = h.dev.kv_planes[2][int(node.full.value[1])]
    assert torch.equal(block[(1 * 3 + 2) * 528 : (1 * 3 + 3) * 528], row)
