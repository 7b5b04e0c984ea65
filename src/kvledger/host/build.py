"""build_host: the host pools for one rank's device pools, sized by the plan's host ledger.

Sizes default to the plan's host ledger in our view (`kvledger.sglang.hicache`: --hicache-ratio or
--hicache-size, 2.0 by default), computed for the device pools actually built (a scaled-down
build gets a scaled-down host). Rules decide what is built: ours build KV + INDEXER + MAMBA;
the article's release (`ARTICLE_HOST`) would build a 512 B host row for a 528 B device row,
which HostKVPool refuses.

>>> from kvledger.sglang.hicache import ARTICLE_HOST
>>> from kvledger.sglang.plan import make_plan
>>> from kvledger.pools.build import ScaleDown, build_pools
>>> pools = build_pools(make_plan(kv_cache_dtype="fp8_e4m3"), "meta",
...                     ScaleDown(max_total_tokens=256, max_mamba_cache_size=5))
>>> host_sizes(pools)  # ratio 2: int(256·2) // 64 + 1 = 9 pages; int(5·2) + 1 slots
(576, 11)
>>> build_host(pools, rules=ARTICLE_HOST)
Traceback (most recent call last):
...
kvledger.host.kv_pool.HostRowError: host KV row of 512 B for a device row of 528 B: a backup would drop bytes (the fp8 scales, as in sglang-0.5.21); the host row must equal the device row
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvledger.core.units import cdiv
from kvledger.host.device import DeviceBytes, DeviceSide
from kvledger.host.group import HostPoolGroup
from kvledger.host.kv_pool import HostKVPool
from kvledger.host.layout import HostLayout
from kvledger.host.side_pools import HostIndexerPool, HostStatePool
from kvledger.pools.build import DevicePools
from kvledger.sglang.hicache import OUR_HOST, HostRules, plan_host

if TYPE_CHECKING:
    import torch


def host_sizes(pools: DevicePools) -> tuple[int, int]:
    """(host tokens, host state slots) of our host ledger for these device pools."""
    plan = pools.plan
    cap = plan.capacity
    host = plan.host or plan_host(plan.layout, device_tokens=cap.max_total_tokens,
                                  device_state_slots=cap.state_slots,
                                  device_token_pool_bytes=cap.token_pool_bytes,
                                  device_state_pool_bytes=cap.state_pool_bytes)
    ours = host.views[1]
    return ours.host_tokens, ours.host_state_slots


def build_host_group(dev: DeviceBytes, *, host_tokens: int, host_state_slots: int,
                     layout: HostLayout = HostLayout.PAGE_FIRST,
                     host_row_bytes: int | None = None, indexer: bool = True,
                     device: torch.device | str = "cpu") -> HostPoolGroup:
    """Host pools mirroring `dev`: `host_tokens` rounded up to whole pages, in memory on
    `device` ("meta": indices and shapes only, see `layout.host_zeros`)."""
    pages = cdiv(host_tokens, dev.page_tokens)
    kv = HostKVPool(num_pages=pages, page_tokens=dev.page_tokens,
                    num_layers=len(dev.kv_planes) // dev.planes_per_layer,
                    planes_per_layer=dev.planes_per_layer, device_row_bytes=dev.device_row_bytes,
                    host_row_bytes=host_row_bytes, layout=layout, device=device)
    index = None
    if indexer and dev.index_pages:
        index = HostIndexerPool(num_pages=pages, page_tokens=dev.page_tokens,
                                num_layers=len(dev.index_pages), page_bytes=dev.index_page_bytes,
                                layout=layout, device=device)
    state = None
    if dev.conv is not None and host_state_slots:
        conv_bytes, temporal_bytes = dev.state_part_bytes
        state = HostStatePool(num_slots=host_state_slots, num_layers=dev.conv.shape[0],
                              conv_bytes=conv_bytes, temporal_bytes=temporal_bytes, layout=layout,
                              device=device)
    return HostPoolGroup(kv=kv, indexer=index, state=state)


def build_host(pools: DevicePools, *, layout: HostLayout = HostLayout.PAGE_FIRST,
               rules: HostRules = OUR_HOST, host_tokens: int | None = None,
               host_state_slots: int | None = None,
               device: torch.device | str = "cpu") -> tuple[DeviceSide, HostPoolGroup]:
    """The device side and the host pools of one rank, as `rules` would build them; the host
    pools in memory on `device` ("meta": indices and shapes only)."""
    side = DeviceSide.of(pools)
    planned_tokens, planned_slots = host_sizes(pools)
    group = build_host_group(
        side.bytes,
        host_tokens=planned_tokens if host_tokens is None else host_tokens,
        host_state_slots=planned_slots if host_state_slots is None else host_state_slots,
        layout=layout, host_row_bytes=rules.host_row_bytes(pools.plan.layout.kv_row),
        indexer=rules.indexer_pool, device=device)
    return side, group
