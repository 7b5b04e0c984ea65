"""The facade where device pools, the radix tree and the host tier meet (`hybrid`), what it
records per running request (`seq`), and the state admission / eviction policies
(`policies`, torch-free).

Names resolve lazily (PEP 562), as in `kvledger.pools`: the simulator uses `policies`
without loading torch; the facade loads it when first used.
"""

from __future__ import annotations

from kvledger.lazy import lazy_getattr

_HOMES = {
    "HybridCache": "hybrid",
    "STATE_SLOTS_PER_REQUEST": "seq", "CacheSeq": "seq", "CacheStats": "seq", "Extension": "seq",
}

__all__ = sorted(_HOMES)

__getattr__ = lazy_getattr(__name__, _HOMES)
