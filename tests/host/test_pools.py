"""Host pools and the HostPoolGroup: shapes per layout, row widths, all-or-nothing allocation.

The 512-vs-528 case is the article release's defect (seed §5.2: "它的行宽是 kv_lora_rank +
qk_rope_head_dim = 512，不是 device 端 scaled FP8 的 528"): our host pool refuses it.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from host.host_harness import PAGE, device_side
from kvledger.host.build import build_host, build_host_group
from kvledger.host.group import HostPoolGroup
from kvledger.host.kv_pool import HostKVPool, HostRowError
from kvledger.host.layout import HostLayout
from kvledger.host.runs import page_runs, slots_to_pages
from kvledger.host.side_pools import HostIndexerPool, HostStatePool
from kvledger.pools.build import ScaleDown, build_pools
from kvledger.pools.errors import AllocatorError, IntegrityError
from kvledger.sglang.hicache import ARTICLE_HOST, OUR_HOST
from kvledger.sglang.plan import make_plan


def test_host_row_narrower_than_device_row_is_refused():
    with pytest.raises(HostRowError, match="host KV row of 512 B for a device row of 528 B"):
        HostKVPool(num_pages=2, page_tokens=64, num_layers=11, device_row_bytes=528,
                   host_row_bytes=512)
    with pytest.raises(HostRowError, match="must equal the device row"):
        HostKVPool(num_pages=2, page_tokens=64, num_layers=11, device_row_bytes=528,
                   host_row_bytes=544)


def test_article_rules_cannot_build_for_glm_scaled_fp8_but_ours_can():
    # Full-size GLM-5.3-Flash shapes on the meta device: no device memory is allocated.
    pools = build_pools(make_plan(kv_cache_dtype="fp8_e4m3"), "meta",
                        ScaleDown(max_total_tokens=256, max_mamba_cache_size=5))
    with pytest.raises(HostRowError, match="512 B for a device row of 528 B"):
        build_host(pools, rules=ARTICLE_HOST, host_tokens=64, host_state_slots=0)
    _, host = build_host(pools, rules=OUR_HOST, host_tokens=64, host_state_slots=0)
    assert host.kv.buffer.shape == (1, 64, 11, 528)  # one page: 64 tokens × 11 layers × 528 B
    assert host.indexer.buffer.shape == (1, 11, 8448)  # SPEC §2: a 64-token page is 8,448 B
    assert host.state is None


def test_article_rules_build_kv_and_mamba_only_when_rows_match():
    # bf16 KV: the article's 512-element host row is 1,024 B, as on device; no INDEXER pool.
    pools = build_pools(make_plan(kv_cache_dtype="bf16"), "meta",
                        ScaleDown(max_total_tokens=256, max_mamba_cache_size=5))
    _, host = build_host(pools, rules=ARTICLE_HOST, host_tokens=64, host_state_slots=0)
    assert host.kv.row_bytes == 1024 and host.indexer is None


def test_device_mismatch_is_refused_at_group_level():
    dev = device_side("dsa").bytes
    wrong = HostPoolGroup(kv=HostKVPool(num_pages=2, page_tokens=PAGE, num_layers=2,
                                        device_row_bytes=528), indexer=None, state=None)
    with pytest.raises(HostRowError, match="device KV of 3 planes"):
        wrong.check_device(dev)


@pytest.mark.parametrize(("layout", "shape"), [
    (HostLayout.PAGE_FIRST, (5, PAGE, 3, 528)),
    (HostLayout.PAGE_FIRST_DIRECT, (5, 3, PAGE, 528)),
    (HostLayout.LAYER_FIRST, (3, 5, PAGE, 528)),
])
def test_kv_layouts(layout, shape):
    pool = HostKVPool(num_pages=5, page_tokens=PAGE, num_layers=3, device_row_bytes=528,
                      layout=layout)
    assert tuple(pool.buffer.shape) == shape
    assert tuple(pool.canonical.shape) == (5, 3, PAGE, 528)
    # page 2, plane 1, token 3 of the canonical view is the same memory in every layout
    pool.canonical[2, 1, 3, 0] = 7
    assert int(pool.buffer.sum()) == 7
    assert pool.canonical.untyped_storage().data_ptr() == pool.buffer.untyped_storage().data_ptr()


def test_gqa_host_rows_hold_k_and_v_planes():
    dev = device_side("gqa").bytes
    assert (len(dev.kv_planes), dev.row_bytes, dev.device_row_bytes) == (6, 64, 128)
    group = build_host_group(dev, host_tokens=8, host_state_slots=1)
    assert (group.kv.num_planes, group.kv.row_bytes, group.indexer) == (6, 64, None)


def test_state_pool_one_slot_is_one_block_in_page_first():
    pool = HostStatePool(num_slots=3, num_layers=2, conv_bytes=48, temporal_bytes=128)
    assert pool.buffers[0].shape == (3, 2 * (48 + 128)) and pool.slot_bytes == 352
    pool.temporal[1, 0, 0] = 9  # slot 1, layer 0, first temporal byte
    assert int(pool.buffers[0][1, 2 * 48]) == 9
    layered = HostStatePool(num_slots=3, num_layers=2, conv_bytes=48, temporal_bytes=128,
                            layout=HostLayout.LAYER_FIRST)
    assert [tuple(b.shape) for b in layered.buffers] == [(2, 3, 48), (2, 3, 128)]


def test_group_allocation_is_all_or_nothing():
    group = HostPoolGroup(
        kv=HostKVPool(num_pages=3, page_tokens=PAGE, num_layers=1, device_row_bytes=8),
        indexer=HostIndexerPool(num_pages=3, page_tokens=PAGE, num_layers=1, page_bytes=16),
        state=HostStatePool(num_slots=1, num_layers=1, conv_bytes=4, temporal_bytes=4))
    a = group.alloc(num_tokens=2 * PAGE, num_state_slots=1)
    assert a.kv_slots.tolist() == list(range(8)) and a.state_slots.tolist() == [0]
    # KV pages would fit, the state slot would not: nothing is taken.
    assert group.alloc(num_tokens=PAGE, num_state_slots=1) is None
    assert (group.sizes().kv_free_tokens, group.sizes().state_free_slots) == (PAGE, 0)
    group.free(a)
    with pytest.raises(AllocatorError, match="not allocated"):
        group.free(a)  # a double free fails loudly
    group.check_integrity()


def test_indexer_must_share_the_kv_pages():
    with pytest.raises(ValueError, match="derived ids"):
        HostPoolGroup(
            kv=HostKVPool(num_pages=3, page_tokens=PAGE, num_layers=1, device_row_bytes=8),
            indexer=HostIndexerPool(num_pages=2, page_tokens=PAGE, num_layers=1, page_bytes=16),
            state=None)


def test_host_kv_integrity_catches_a_corrupted_buffer():
    pool = HostKVPool(num_pages=2, page_tokens=PAGE, num_layers=1, device_row_bytes=8)
    pool.check_integrity()
    pool.buffer = torch.zeros((2, PAGE, 1, 4), dtype=torch.uint8)
    with pytest.raises(IntegrityError, match="host KV buffer"):
        pool.check_integrity()


def test_slots_to_pages_and_runs():
    assert slots_to_pages(np.arange(8, 16), PAGE).tolist() == [2, 3]
    with pytest.raises(ValueError, match="whole pages in order"):
        slots_to_pages(np.array([8, 9, 11, 10]), PAGE)
    with pytest.raises(ValueError, match="not whole 4-token pages"):
        slots_to_pages(np.arange(6), PAGE)
    assert page_runs(np.array([3, 4, 9]), np.array([0, 1, 2])) == [(3, 0, 2), (9, 2, 1)]
    assert page_runs(np.array([], dtype=np.int64), np.array([], dtype=np.int64)) == []


def test_controller_refuses_a_policy_string_and_mismatched_pages():
    from kvledger.host.controller import HiCacheController
    from kvledger.tree import RadixTree

    device = device_side("dsa")
    host = build_host_group(device.bytes, host_tokens=8, host_state_slots=1)
    with pytest.raises(ValueError, match="policy: expected a BackupPolicy"):
        HiCacheController(tree=RadixTree(page_size=PAGE), device=device, host=host,
                          policy="write_back")
    with pytest.raises(ValueError, match="page sizes differ: tree 8, device 4, host 4"):
        HiCacheController(tree=RadixTree(page_size=8), device=device, host=host)
