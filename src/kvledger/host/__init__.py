"""Host-DRAM tier (HiCache): host pools, the allocation facade and the controller."""

from kvledger.host.build import build_host, build_host_group
from kvledger.host.controller import HiCacheController
from kvledger.host.coverage import node_coverage
from kvledger.host.device import DeviceBytes, DeviceSide
from kvledger.host.group import HostAllocation, HostPoolGroup, HostSizes, PoolName
from kvledger.host.kv_pool import HostKVPool, HostRowError
from kvledger.host.layout import HostLayout
from kvledger.host.policy import POLICIES, BackupPolicy
from kvledger.host.results import BackupOutcome, LoadbackResult, LoadStatus
from kvledger.host.side_pools import HostIndexerPool, HostStatePool
from kvledger.host.transfer import Direction, TransferFault, fail_at_step

__all__ = [
    "POLICIES",
    "BackupOutcome",
    "BackupPolicy",
    "DeviceBytes",
    "DeviceSide",
    "Direction",
    "HiCacheController",
    "HostAllocation",
    "HostIndexerPool",
    "HostKVPool",
    "HostLayout",
    "HostPoolGroup",
    "HostRowError",
    "HostSizes",
    "HostStatePool",
    "LoadStatus",
    "LoadbackResult",
    "PoolName",
    "TransferFault",
    "build_host",
    "build_host_group",
    "fail_at_step",
    "node_coverage",
]
