"""PageRows: the facade's accounting mode — request rows as numpy page ids, no bytes, no torch.

The tree keys whole pages (a tree page of one key, `kvledger.sim.pages` makes the keys), so
a tree unit is one P-token page and every FULL value is one page id. A request's pages are
the tree prefix it locked (`seq.tree_ids`) followed by the pages it allocated itself
(`seq.own`, kept as a list of chunks and joined only when read). The page allocator is a
`PagedTokenAllocator` of one-"token" pages, so a host tier frees and allocates page ids
through the same interface as token slots.

>>> from kvledger.cache.seq import CacheSeq
>>> rows = PageRows(num_pages=4, page_tokens=64, num_rows=2)
>>> seq = CacheSeq(row=rows.alloc_row(), prompt_tokens=100, final_tokens=130)
>>> rows.grow(seq, 130, 3); rows.values(seq, 128).tolist(), rows.num_free_pages
([1, 2], 1)
"""

from __future__ import annotations

import numpy as np

from kvledger.cache.seq import EMPTY, CacheSeq
from kvledger.pools.paged import PagedTokenAllocator


def _own(seq: CacheSeq) -> np.ndarray:
    """All own pages as one array (and keep them as one chunk)."""
    own = seq.own
    if len(own) > 1:
        seq.own = own = [np.concatenate(own)]
    return own[0] if own else EMPTY


class PageRows:
    def __init__(self, *, num_pages: int, page_tokens: int, num_rows: int) -> None:
        self.page_tokens = page_tokens
        self.writes_rows = False
        self.unit_tokens = page_tokens  # tokens per tree key
        self.allocator = PagedTokenAllocator(num_pages=num_pages, page_tokens=1)
        self.pages = self.allocator.pages
        self.num_rows = num_rows
        self.free_rows = list(range(num_rows, 0, -1))  # request rows 1..N, a stack

    @property
    def num_free_pages(self) -> int:
        return self.pages.num_free

    @property
    def num_free_rows(self) -> int:
        return len(self.free_rows)

    @property
    def max_context_tokens(self) -> int | None:
        return None  # no row width: a request is bounded by the pool only

    def alloc_row(self) -> int:
        return self.free_rows.pop()

    def free_row(self, row: int) -> None:
        self.free_rows.append(row)

    def hold_prefix(self, seq: CacheSeq, indices: np.ndarray) -> None:
        seq.tree_ids = indices

    def grow(self, seq: CacheSeq, end_tokens: int, pages: int) -> None:
        if pages:
            got = self.pages.alloc(pages)
            assert got is not None, "the facade made room for these pages"
            seq.own.append(got)

    def values(self, seq: CacheSeq, num_tokens: int) -> np.ndarray:
        """Tree values (page ids) of the sequence's first `num_tokens` (whole pages)."""
        num_pages, tree = num_tokens // self.page_tokens, seq.tree_ids
        if num_pages <= len(tree):
            return tree[:num_pages]
        return np.concatenate([tree, _own(seq)[: num_pages - len(tree)]])

    def adopt(self, seq: CacheSeq, num_tokens: int, values: np.ndarray, *, changed: bool) -> None:
        """The tree now owns the first `num_tokens`, whose values are `values` (the request's
        own, or — `changed` — the tree's where it kept its copies and the caller freed the
        request's duplicates)."""
        handed = num_tokens // self.page_tokens - len(seq.tree_ids)
        own = _own(seq)
        seq.tree_ids = values
        seq.own = [own[handed:]]

    def own_page_ids(self, seq: CacheSeq) -> np.ndarray:
        return _own(seq)

    def free_own(self, seq: CacheSeq) -> None:
        own = _own(seq)
        if len(own):
            self.pages.free_unique(own)
        seq.own = []

    def free_values(self, values: np.ndarray) -> None:
        if len(values):
            self.pages.free(values)

    def page_ids(self, values: np.ndarray) -> np.ndarray:
        return values

    def copy_state(self, src: int, dst: int) -> None:
        return None  # no state bytes in accounting mode

    def check_integrity(self) -> None:
        self.allocator.check_integrity()
        free = self.free_rows
        if len(set(free)) != len(free) or not all(0 < row <= self.num_rows for row in free):
            raise RuntimeError(f"request rows: the free list {sorted(free)} repeats a row or "
                               f"holds one outside 1..{self.num_rows}")
