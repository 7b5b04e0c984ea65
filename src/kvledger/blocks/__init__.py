"""vLLM's block-hash prefix cache (release 0.33): whole blocks keyed by chained hashes.

Files: hashes (chained block hashes of a prompt), hash_map (hash → cached blocks), pool (one
BlockPool shared by every KV-cache group: null block, LRU free queue, lazy eviction), specs
(the groups' rule objects: full attention, Mamba align), full_manager and mamba_manager (one
manager per group), coordinator (the hybrid lookup and the calls that touch every group),
split (the scheduler's Mamba-aligned prefill split); policy (the state policies' closed
sets, vLLM's own rule the default), admission (which states a request may cache and where its
junction is: vLLM's, junction-only, ghost-junction), eviction (the free queue's order: vLLM's
LRU, dead-first).
"""

from kvledger.blocks.coordinator import CacheHit, Coordinator
from kvledger.blocks.hashes import BlockHashChain
from kvledger.blocks.pool import NULL_BLOCK, BlockPool, PoolUsage
from kvledger.blocks.specs import FullAttentionSpec, GroupSpec, MambaAlignSpec
from kvledger.blocks.split import aligned_chunk_end

__all__ = [
    "NULL_BLOCK",
    "BlockHashChain",
    "BlockPool",
    "CacheHit",
    "Coordinator",
    "FullAttentionSpec",
    "GroupSpec",
    "MambaAlignSpec",
    "PoolUsage",
    "aligned_chunk_end",
]
