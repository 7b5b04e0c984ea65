"""The facade where device pools, the radix tree and the host tier meet (`hybrid`), and
what it records per running request (`seq`); the store tier below host (`store_tier`: its
hooks into the facade, `store_codec`: device pages and state slots as object bytes)."""

from __future__ import annotations

from kvledger.cache.hybrid import HybridCache
from kvledger.cache.seq import STATE_SLOTS_PER_REQUEST, CacheSeq, CacheStats, Extension

__all__ = ["STATE_SLOTS_PER_REQUEST", "CacheSeq", "CacheStats", "Extension", "HybridCache"]
