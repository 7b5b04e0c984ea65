"""Host-DRAM tier (HiCache): host pools, the allocation facade and the controller.

Names resolve lazily (PEP 562), as in `kvledger.pools`: the write policies
(`kvledger.host.policy`) are plain enums and tables, so a CLI can offer them as choices
without loading torch; the pools and the controller load it when first used.
"""

from __future__ import annotations

from kvledger.lazy import lazy_getattr

_HOMES = {
    "build_host": "build", "build_host_group": "build",
    "HiCacheController": "controller",
    "node_coverage": "coverage",
    "DeviceBytes": "device", "DeviceSide": "device",
    "HostAllocation": "group", "HostPoolGroup": "group", "HostSizes": "group", "PoolName": "group",
    "HostKVPool": "kv_pool", "HostRowError": "kv_pool",
    "HostLayout": "layout",
    "POLICIES": "policy", "BackupPolicy": "policy",
    "BackupOutcome": "results", "LoadStatus": "results", "LoadbackResult": "results",
    "HostIndexerPool": "side_pools", "HostStatePool": "side_pools",
    "Traffic": "traffic",
    "Direction": "transfer", "TransferFault": "transfer", "fail_at_step": "transfer",
}

__all__ = sorted(_HOMES)

__getattr__ = lazy_getattr(__name__, _HOMES)
