"""TokenRows: the facade's real-bytes mode — request rows in `ReqToTokenPool`, torch pools.

The tree keys token ids (a tree unit is one token) and every FULL value is a token slot of
the device pools. A request's row holds the slot of each of its positions: the tree prefix
it matched, then the slots `PagedTokenAllocator.alloc_extend` hands it (a chunk may end
mid-page; the next fills that page first). A state copy (`copy_state`) is a real
`MambaPool.copy_slot`, the copy-on-write SGLang makes when a request takes a cached state.

>>> from kvledger.engine.config import TinyConfig
>>> from kvledger.engine.memory import PoolSizes, build_device_pools
>>> from kvledger.cache.seq import CacheSeq
>>> pools = build_device_pools(TinyConfig(), PoolSizes(num_pages=8, page_tokens=16))
>>> rows = TokenRows(pools.kv, pools.token_allocator)
>>> seq = CacheSeq(row=rows.alloc_row(), prompt_tokens=20, final_tokens=20)
>>> rows.grow(seq, 20, 2); seq.allocated_tokens = 20
>>> rows.values(seq, 16).tolist() == list(range(16, 32)), rows.num_free_pages
(True, 6)
"""

from __future__ import annotations

import numpy as np
import torch

from kvledger.cache.seq import CacheSeq
from kvledger.pools.hybrid import HybridLinearKVPool
from kvledger.pools.paged import PagedTokenAllocator


class TokenRows:
    def __init__(self, kv: HybridLinearKVPool, allocator: PagedTokenAllocator) -> None:
        self.kv = kv
        self.allocator = allocator
        self.pages = allocator.pages
        self.page_tokens = allocator.page_tokens
        self.writes_rows = True
        self.unit_tokens = 1  # tokens per tree key
        self.req_to_token = kv.req_to_token_pool

    @property
    def num_free_pages(self) -> int:
        return self.pages.num_free

    @property
    def num_free_rows(self) -> int:
        return self.req_to_token.rows.num_free

    @property
    def max_context_tokens(self) -> int | None:
        return self.req_to_token.max_context_tokens

    def alloc_row(self) -> int:
        return int(self.req_to_token.alloc(1)[0])

    def free_row(self, row: int) -> None:
        self.req_to_token.free([row])

    def hold_prefix(self, seq: CacheSeq, indices: np.ndarray) -> None:
        if len(indices):
            self.req_to_token.write_extend(rows=[seq.row], prefix_lens=[0],
                                           seq_lens=[len(indices)], token_locs=np.array(indices))

    def grow(self, seq: CacheSeq, end_tokens: int, pages: int) -> None:
        """Slots for positions allocated .. end−1 (`pages` fresh pages among them)."""
        start = seq.allocated_tokens
        if end_tokens <= start:
            return
        last = int(self.req_to_token.req_to_token[seq.row, start - 1]) if start else -1
        locs = self.allocator.alloc_extend([start], [end_tokens], [last])
        if locs is None:
            raise RuntimeError("reservation accounting broken: no pages after eviction")
        self.req_to_token.write_extend(rows=[seq.row], prefix_lens=[start],
                                       seq_lens=[end_tokens], token_locs=locs)

    def values(self, seq: CacheSeq, num_tokens: int) -> np.ndarray:
        return self.req_to_token.read(seq.row, num_tokens).numpy().astype(np.int64)

    def adopt(self, seq: CacheSeq, num_tokens: int, values: np.ndarray, *, changed: bool) -> None:
        """The row's first `num_tokens` now point at the tree's slots (`values` when
        `changed`: the tree kept its own copies)."""
        if changed:
            self.req_to_token.write_extend(rows=[seq.row], prefix_lens=[0],
                                           seq_lens=[len(values)], token_locs=np.array(values))

    def own_page_ids(self, seq: CacheSeq) -> np.ndarray:
        own = self.values(seq, seq.allocated_tokens)[seq.cached_tokens:]
        return np.unique(own // self.page_tokens)

    def free_own(self, seq: CacheSeq) -> None:
        own = self.values(seq, seq.allocated_tokens)[seq.cached_tokens:]
        if len(own):
            self.allocator.free(own)

    def free_values(self, values: np.ndarray) -> None:
        if len(values):
            self.allocator.free(values)

    def page_ids(self, values: np.ndarray) -> np.ndarray:
        return np.unique(np.asarray(values, dtype=np.int64) // self.page_tokens)

    def copy_state(self, src: int, dst: int) -> None:
        assert self.kv.mamba_pool is not None
        self.kv.mamba_pool.copy_slot(src, dst)

    def token_locs(self, seq: CacheSeq) -> torch.Tensor:
        """int64 slots of positions 0..allocated−1 (what the model reads and writes)."""
        return self.req_to_token.read(seq.row, seq.allocated_tokens).to(torch.int64)

    def check_integrity(self) -> None:
        self.kv.check_integrity()
        self.allocator.check_integrity()
