"""The FULL-only ceiling: how much of a workload's prompts plain KV prefix caching reuses.

A model without linear-attention states caches KV alone (SGLang's RadixCache), so every
cached prefix is usable. Given the same bytes as a hybrid plan (its KV pool plus its state
pool, `ceiling_pool_tokens`), that hit rate bounds what any state policy can reach on that
memory. The replay is sequential, prompts only: match all but the last prompt token, take
pages for the rest (evicting LRU leaves when short), cache the prompt's full pages.

>>> from kvledger.sim.workload import Request
>>> reqs = [Request(rid=i, arrival_ms=0.0, segment_ids=(1, 2 + i), segment_tokens=(512, 300),
...                 output_tokens=0) for i in range(3)]
>>> full_only_hits(reqs, page_tokens=64, pool_tokens=1 << 20).tolist()
[0, 512, 512]
>>> ceiling_pool_tokens(token_bytes=7260, slot_bytes=147_619_840, state_slots=205,
...                     max_total_tokens=4_670_784, page_tokens=64)
8859392
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from kvledger.core.units import cdiv
from kvledger.pools.paged import PagedTokenAllocator
from kvledger.sim.pages import PageKeyer
from kvledger.sim.workload import Request, WorkloadError
from kvledger.tree import FULL_ONLY, RadixTree


def ceiling_pool_tokens(*, token_bytes: int, slot_bytes: int, state_slots: int,
                        max_total_tokens: int, page_tokens: int) -> int:
    """KV tokens a plan's KV and state bytes hold when states take none (whole pages); the
    state pool counts its padding slot (K + 1), as SGLang allocates it."""
    state_bytes = (state_slots + 1) * slot_bytes if slot_bytes else 0
    tokens = (max_total_tokens * token_bytes + state_bytes) // token_bytes
    return tokens // page_tokens * page_tokens


def full_only_hits(requests: Sequence[Request], *, page_tokens: int,
                   pool_tokens: int) -> np.ndarray:
    """Tokens each request reuses (int64, in order) from a FULL-only cache of that size."""
    page = page_tokens
    tree = RadixTree(page_size=1, components=FULL_ONLY)
    pages = PagedTokenAllocator(num_pages=pool_tokens // page, page_tokens=1).pages
    keyer = PageKeyer(page)
    hits = np.zeros(len(requests), dtype=np.int64)
    for i, request in enumerate(requests):
        keys = keyer.keys(replace(request, output_tokens=0))
        match = tree.match_prefix(keys[: (request.prompt_tokens - 1) // page])
        hit = match.device_hit_length
        receipt = tree.lock(match.last_device_node) if hit else None
        need = cdiv(request.prompt_tokens, page) - hit
        if need > pages.num_free:
            pages.free(tree.evict(full_tokens=need - pages.num_free).full_indices)
        fresh = pages.alloc(need)
        if fresh is None:
            raise WorkloadError(f"request {request.rid}: {request.prompt_tokens:,} prompt "
                                f"tokens do not fit a {pool_tokens:,}-token KV pool")
        indices = np.concatenate((match.device_indices, fresh)) if hit else fresh
        done = tree.insert(keys, indices[: len(keys)], None)
        pages.free(done.duplicate_indices)
        pages.free(indices[len(keys):])  # the partial last page is never cached
        if receipt is not None:
            tree.unlock(receipt)
        hits[i] = hit * page
    return hits
