"""Device memory: allocators and pools built from an SglangPlan (torch; knows nothing of trees).

Names resolve lazily (PEP 562): the allocators (`kvledger.pools.ids`, `kvledger.pools.paged`,
`kvledger.pools.runs`: a page pool handed out in runs of pages) are numpy-only, so the simulator's accounting mode can use them without loading torch.
"""

from __future__ import annotations

from kvledger.core.lazy import lazy_getattr

_HOMES = {
    "PoolBytes": "accounting", "account": "accounting",
    "DevicePools": "build", "ScaleDown": "build", "build_pools": "build", "scale_plan": "build",
    "DsaTokenPool": "dsa",
    "AllocatorError": "errors", "IntegrityError": "errors", "LayerKindError": "errors",
    "GqaKVPool": "gqa",
    "HybridLinearKVPool": "hybrid",
    "NULL_SLOT": "ids", "IdAllocator": "ids", "StateSlotAllocator": "ids",
    "IndexKeyCache": "index_keys",
    "LatentKVPool": "latent",
    "NULL_PAGE": "paged", "PagedTokenAllocator": "paged",
    "ReqToTokenPool": "req_to_token",
    "RunAllocator": "runs",
    "MambaPool": "state",
    "CompressTail": "tail",
}

__all__ = sorted(_HOMES)

__getattr__ = lazy_getattr(__name__, _HOMES)
