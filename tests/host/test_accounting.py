"""Accounting mode: pools on "meta" own no memory, `IndexOnlyMover` moves no byte, and a
controller built over whole pages (`DeviceBytes.whole_pages`, a tree page of one key — the
simulator's geometry) makes exactly the decisions of a byte-copying controller over tokens,
with the same traffic in bytes."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from host.host_harness import PAGE, device_side, harness
from kvledger.host.backup import Moves
from kvledger.host.build import build_host_group
from kvledger.host.controller import HiCacheController
from kvledger.host.device import DeviceSide
from kvledger.host.movers import IndexOnlyMover
from kvledger.host.policy import BackupPolicy
from kvledger.host.transfer import Direction, fail_at_step
from kvledger.pools.ids import StateSlotAllocator
from kvledger.pools.paged import PagedTokenAllocator
from kvledger.tree import RadixTree, Tier

HOST_PAGES, DEVICE_PAGES, STATES = 10, 8, 4


def test_meta_pools_own_no_memory_and_have_the_cpu_geometry():
    dev = device_side("dsa").bytes
    cpu = build_host_group(dev, host_tokens=HOST_PAGES * PAGE, host_state_slots=STATES)
    meta = build_host_group(dev, host_tokens=HOST_PAGES * PAGE, host_state_slots=STATES,
                            device="meta")
    buffers = [meta.kv.buffer, meta.indexer.buffer, *meta.state.buffers]
    assert all(buf.device.type == "meta" for buf in buffers)
    assert meta.sizes() == cpu.sizes()
    # one host page: 4 tokens × 3 layers × 528 B rows + 3 index-key pages of 4 × 132 B
    assert meta.page_bytes == cpu.page_bytes == 4 * 3 * 528 + 3 * 4 * 132
    # one state slot: 2 linear layers × (conv 3·8·2 B + temporal 2·4·4·4 B)
    assert meta.state_slot_bytes == 2 * (3 * 8 * 2 + 2 * 4 * 4 * 4)
    meta.check_integrity()


def test_whole_pages_keep_every_byte_of_a_page_in_one_row():
    dev = device_side("dsa").bytes
    pages = dev.whole_pages()
    assert (pages.page_tokens, pages.device_row_bytes) == (1, PAGE * dev.device_row_bytes)
    assert pages.num_token_slots * pages.row_bytes == dev.num_token_slots * dev.row_bytes
    dev.kv_planes[1][PAGE * 5 + 2, 7] = 99  # token 2 of page 5, byte 7
    assert int(pages.kv_planes[1][5, 2 * dev.row_bytes + 7]) == 99  # the same memory


def _page_controller(policy: BackupPolicy) -> HiCacheController:
    """The simulator's geometry: meta pools, whole pages, a tree page of one key."""
    dev = device_side("dsa", num_pages=DEVICE_PAGES, state_slots=STATES, device="meta").bytes
    pages = dev.whole_pages()
    device = DeviceSide(bytes=pages,
                        token_allocator=PagedTokenAllocator(num_pages=DEVICE_PAGES, page_tokens=1),
                        state_allocator=StateSlotAllocator(num_slots=STATES), mamba_pool=None)
    host = build_host_group(pages, host_tokens=HOST_PAGES, host_state_slots=STATES, device="meta")
    return HiCacheController(tree=RadixTree(page_size=1, mamba_chunk_tokens=16), device=device,
                             host=host, policy=policy, mover=IndexOnlyMover(page_tokens=1))


def _insert(ctrl: HiCacheController, keys: np.ndarray) -> None:
    device = ctrl.device
    short = len(keys) - device.token_allocator.available_tokens
    if short > 0:
        ctrl.evict_device(full_tokens=short)
    if device.state_allocator.num_free == 0:
        ctrl.evict_device(mamba_slots=1)
    slots, state = device.token_allocator.alloc(len(keys)), device.state_allocator.alloc(1)
    if slots is None or state is None:
        device.free_tokens(slots if slots is not None else np.zeros(0, np.int64))
        device.free_states(state if state is not None else np.zeros(0, np.int64))
        return
    result = ctrl.tree.insert(keys, slots, int(state[0]))
    if result.mamba_existed:
        device.free_states(state)
    device.free_tokens(result.duplicate_indices)
    ctrl.on_insert(result)


def _hit(ctrl: HiCacheController, keys: np.ndarray) -> None:
    match = ctrl.tree.match_prefix(keys)
    node = ctrl.loadback(match).node if match.host_hit_length else match.last_device_node
    if node.parent is not None:
        ctrl.on_hit(node)


def _tokens(keys: np.ndarray) -> np.ndarray:
    return (keys[:, None] * PAGE + np.arange(PAGE)).reshape(-1)


def _same(tokens: HiCacheController, pages: HiCacheController) -> None:
    t, p = tokens.traffic, pages.traffic
    assert (t.backup_tokens, t.loadback_tokens, t.device_evicted_tokens, t.host_evicted_tokens) \
        == tuple(PAGE * n for n in (p.backup_tokens, p.loadback_tokens,
                                    p.device_evicted_tokens, p.host_evicted_tokens))
    assert (t.backup_state_slots, t.loadback_state_slots, t.device_evicted_state_slots,
            t.host_evicted_state_slots) == (p.backup_state_slots, p.loadback_state_slots,
                                            p.device_evicted_state_slots,
                                            p.host_evicted_state_slots)
    for tier in Tier:
        a, b = tokens.tree.sizes(tier), pages.tree.sizes(tier)
        assert (a.full_evictable_tokens, a.full_protected_tokens) == (
            PAGE * b.full_evictable_tokens, PAGE * b.full_protected_tokens)
        assert (a.mamba_evictable_slots, a.mamba_protected_slots) == (
            b.mamba_evictable_slots, b.mamba_protected_slots)
    moved = (t.backup_tokens, t.backup_state_slots), (p.backup_tokens, p.backup_state_slots)
    assert tokens.host.transfer_bytes(num_tokens=moved[0][0], num_state_slots=moved[0][1]) == \
        pages.host.transfer_bytes(num_tokens=moved[1][0], num_state_slots=moved[1][1])


_keys = st.lists(st.integers(0, 4), min_size=1, max_size=6)
_ops = st.lists(st.one_of(st.tuples(st.just("insert"), _keys), st.tuples(st.just("hit"), _keys),
                          st.tuples(st.just("evict"), st.integers(1, 6))), min_size=1, max_size=25)


@settings(max_examples=40, deadline=None)
@given(ops=_ops, policy=st.sampled_from(list(BackupPolicy)))
def test_a_whole_page_controller_decides_exactly_as_a_token_controller(ops, policy):
    by_tokens = harness(policy=policy, host_pages=HOST_PAGES, host_state_slots=STATES,
                        device_pages=DEVICE_PAGES, device_state_slots=STATES)
    by_pages = _page_controller(policy)
    for op, arg in ops:
        match op:
            case "insert":
                keys = np.array(arg, dtype=np.int64)
                by_tokens.insert(_tokens(keys))
                _insert(by_pages, keys)
            case "hit":
                keys = np.array(arg, dtype=np.int64)
                _hit(by_tokens.ctrl, _tokens(keys))
                _hit(by_pages, keys)
            case "evict":
                by_tokens.ctrl.evict_device(full_tokens=arg * PAGE, mamba_slots=arg % 2)
                by_pages.evict_device(full_tokens=arg, mamba_slots=arg % 2)
        _same(by_tokens.ctrl, by_pages)
        by_tokens.ctrl.check_integrity()
        by_pages.check_integrity()
    by_tokens.check_all_bytes()  # the byte-copying twin moved the right bytes meanwhile


def test_traffic_counts_completed_transfers_only():
    h = harness(fault=fail_at_step(1, Direction.BACKUP))  # the first backup fails midway
    first = h.insert(np.arange(8))
    assert first is not None and h.ctrl.traffic.backup_tokens == 0
    assert first.node.full.host_value is None
    h.insert(np.arange(100, 108))
    assert (h.ctrl.traffic.backup_tokens, h.ctrl.traffic.backup_state_slots) == (8, 1)


def test_the_index_only_mover_checks_the_pairs_and_moves_nothing():
    steps = []
    pages = np.arange(3, dtype=np.int64)
    IndexOnlyMover(page_tokens=1).backup(Moves(pages, pages + 5, pages[:1], pages[:1]),
                                         checkpoint=lambda: steps.append(1))
    assert steps == [1]
