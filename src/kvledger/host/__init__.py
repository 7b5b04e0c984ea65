"""Host-DRAM tier (HiCache): host pools, the allocation facade and the controller.

Names resolve lazily (PEP 562), as in `kvledger.pools`: the write policies
(`kvledger.host.policy`) are plain enums and tables, so a CLI can offer them as choices
without loading torch; the pools and the controller load it when first used.

Files: controller (policy and routing) → backup, loadback, write_back (decide pairs, commit
or free) → transfers (the one object they act on: locks, allocations in flight, verify) →
transfer (queue, faults) → movers (bytes) and digests (prefix-keyed verification); moves
(one transfer's pairs); tiers (integrity across tiers); group, kv_pool, side_pools, layout,
runs, copy, allocator (host pools); device (device bytes); build, coverage, policy (write policies),
state_backup (which states get host room), results, traffic, device_only.
"""

from __future__ import annotations

from kvledger.core.lazy import lazy_getattr

_HOMES = {
    "build_host": "build", "build_host_group": "build",
    "HiCacheController": "controller",
    "node_coverage": "coverage",
    "PrefixDigests": "digests", "Moves": "moves", "Transfers": "transfers",
    "DeviceBytes": "device", "DeviceSide": "device",
    "HostAllocation": "group", "HostPoolGroup": "group", "HostSizes": "group", "PoolName": "group",
    "HostKVPool": "kv_pool", "HostRowError": "kv_pool",
    "HostLayout": "layout",
    "POLICIES": "policy", "BackupPolicy": "policy",
    "STATE_BACKUPS": "state_backup", "HostStateBackup": "state_backup",
    "BackupOutcome": "results", "LoadStatus": "results", "LoadbackResult": "results",
    "HostIndexerPool": "side_pools", "HostStatePool": "side_pools",
    "Traffic": "traffic",
    "Direction": "transfer", "TransferFault": "transfer", "VerifyFault": "transfer",
    "fail_at_step": "transfer",
}

__all__ = sorted(_HOMES)

__getattr__ = lazy_getattr(__name__, _HOMES)
