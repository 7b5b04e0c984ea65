"""Device memory: allocators and pools built from a Plan (torch; knows nothing of trees)."""

from kvledger.pools.accounting import PoolBytes, account
from kvledger.pools.build import DevicePools, ScaleDown, build_pools, scale_plan
from kvledger.pools.dsa import DsaTokenPool
from kvledger.pools.errors import AllocatorError, IntegrityError, LayerKindError
from kvledger.pools.gqa import GqaKVPool
from kvledger.pools.hybrid import HybridLinearKVPool
from kvledger.pools.ids import NULL_SLOT, IdAllocator, StateSlotAllocator
from kvledger.pools.index_keys import IndexKeyCache
from kvledger.pools.latent import LatentKVPool
from kvledger.pools.paged import NULL_PAGE, PagedTokenAllocator
from kvledger.pools.req_to_token import ReqToTokenPool
from kvledger.pools.state import MambaPool
from kvledger.pools.tail import CompressTail

__all__ = [
    "NULL_PAGE", "NULL_SLOT", "AllocatorError", "CompressTail", "DevicePools", "DsaTokenPool",
    "GqaKVPool", "HybridLinearKVPool", "IdAllocator", "IndexKeyCache", "IntegrityError",
    "LatentKVPool", "LayerKindError", "MambaPool", "PagedTokenAllocator", "PoolBytes",
    "ReqToTokenPool", "ScaleDown", "StateSlotAllocator", "account", "build_pools", "scale_plan",
]
