"""The one place where device memory, the radix tree and the host tier meet.

- `hybrid`: `HybridCache`, the facade (admit, extend, commit, decode, release, eviction);
- `admission`: how a request enters it (match, check every resource, then commit), and
  `unwind`: giving back what an admission took when a step raises;
- `insertion`: a running request's prefix entering the tree (commit's and release's insert);
- `adoption`: a prefix the store tier read entering the device (`adopt_restored`);
- `seq`: what it records per running request (`CacheSeq`), answers (`Extension`,
  `Shortfall`) and counts (`CacheStats`); `CheckpointMode`;
- `rows`: the `Rows` protocol, the facade's request memory in either mode;
- `page_rows`: accounting mode's request memory (numpy page ids; the simulator);
- `token_rows`: real-bytes mode's request memory (torch pools; the engine, `verify`);
- `integrity`: the facade's ownership law (every page and state slot owned exactly once);
- `accounting`: the accounting facade for one rank of a plan;
- `tier`: the `HostTier` protocol and its null object `NoHostTier`;
- `hicache_tier`: `HiCacheTier`, SGLang's HiCache controller as a `HostTier` (torch);
- `host_stats`: what a host tier reports;
- `store_tier`: the `StoreTier` protocol and its null object `NoStoreTier`;
- `l3_tier`: `L3Tier`, object groups in a shared store as a `StoreTier`, in either mode
  (its `GroupStore`: `backend_groups` on a server, in real bytes, with `store_codec`'s
  device pages and state slots as object bytes; `kvledger.store.accounting` in accounting);
- `policies`: state admission and eviction policies (the engine's by default).
"""

from __future__ import annotations

from kvledger.cache.hybrid import HybridCache
from kvledger.cache.seq import CacheSeq, CacheStats, CheckpointMode, Extension, Shortfall

__all__ = ["CacheSeq", "CacheStats", "CheckpointMode", "Extension", "HybridCache", "Shortfall"]
