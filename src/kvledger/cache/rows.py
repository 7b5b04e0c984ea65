"""Rows: the facade's request memory, one protocol for its two modes.

`HybridCache` runs the same code in real bytes and in accounting; only the rows object
differs. `TokenRows` (torch pools, the tree keys tokens; `kvledger.cache.token_rows`) and
`PageRows` (numpy page ids, the tree keys whole pages; `kvledger.cache.page_rows`) both
satisfy this protocol. A rows object owns request rows and the pages requests allocate; the
tree's pages it only reads (`values`, `page_ids`) and frees when the facade says so.

>>> from kvledger.cache.page_rows import PageRows
>>> rows: Rows = PageRows(num_pages=4, page_tokens=64, num_rows=2)
>>> rows.unit_tokens, rows.writes_rows        # accounting: one tree key per 64-token page
(64, False)
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from kvledger.cache.seq import CacheSeq
from kvledger.pools.ids import IdAllocator
from kvledger.pools.paged import PagedTokenAllocator


class Rows(Protocol):
    """Request memory in one mode (`PageRows`, `TokenRows`)."""

    page_tokens: int
    unit_tokens: int  # tokens per tree key
    writes_rows: bool  # whether every position's slot is written (real bytes)
    allocator: PagedTokenAllocator  # what a host tier frees into and allocates from
    pages: IdAllocator

    @property
    def num_free_pages(self) -> int: ...
    @property
    def num_free_rows(self) -> int: ...
    @property
    def max_context_tokens(self) -> int | None: ...
    def alloc_row(self) -> int: ...
    def free_row(self, row: int) -> None: ...
    def hold_prefix(self, seq: CacheSeq, indices: np.ndarray) -> None: ...
    def grow(self, seq: CacheSeq, end_tokens: int, pages: int) -> None: ...
    def values(self, seq: CacheSeq, num_tokens: int) -> np.ndarray: ...
    def adopt(self, seq: CacheSeq, num_tokens: int, values: np.ndarray, *,
              changed: bool) -> None: ...
    def own_page_ids(self, seq: CacheSeq) -> np.ndarray: ...
    def free_own(self, seq: CacheSeq) -> None: ...
    def free_values(self, values: np.ndarray) -> None: ...
    def page_ids(self, values: np.ndarray) -> np.ndarray: ...
    def copy_state(self, src: int, dst: int) -> None: ...
    def check_integrity(self) -> None: ...
