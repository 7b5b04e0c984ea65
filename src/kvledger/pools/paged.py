"""PagedTokenAllocator: token slots handed out in whole pages; page 0 is NULL_PAGE.

Token slot `loc` lives in page `loc // P` at offset `loc % P`. A request's token at position
`i` always sits at offset `i % P` of its page, because requests get whole pages and fill them
from offset 0 — the same invariant SGLang's PagedTokenToKVPoolAllocator keeps
(mem_cache/allocator.py: alloc_extend / alloc_decode). Tokens 0..P−1 (page 0) are padding
rows for dummy writes and are never handed out.

Prefill of a request with `prefix` cached tokens extending to `seq` tokens (P = 4):

    positions  0 1 2 3 | 4 5 6 . | . . . . | . . . .
    prefix = 7 ───────────────┘ ↑ tail: fill the last page first (position 7)
    seq = 14                      then new pages: positions 8..11, 12..13

Decode opens a new page only when the new token's position is a multiple of P.

>>> a = PagedTokenAllocator(num_pages=3, page_tokens=4)
>>> a.alloc_extend(prefix_lens=[0], seq_lens=[6], last_locs=[-1]).tolist()
[4, 5, 6, 7, 8, 9]
>>> a.alloc_decode(seq_lens=[7], last_locs=[9]).tolist()  # position 6: same page
[10]
>>> a.alloc_extend(prefix_lens=[7], seq_lens=[14], last_locs=[10]) is None  # needs 2 pages, 1 free
True
>>> a.free([4, 5, 6, 7, 8, 9, 10]); a.num_free_pages
3
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kvledger.pools.errors import AllocatorError, IntegrityError
from kvledger.pools.ids import NULL_ID, IdAllocator

NULL_PAGE = NULL_ID

ArrayLike = np.ndarray | Sequence[int]


def _int64(values: ArrayLike, name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=np.int64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    return arr


class PagedTokenAllocator:
    """Usable pages 1..num_pages of P tokens; a pool behind it has (num_pages + 1)·P rows."""

    def __init__(self, *, num_pages: int, page_tokens: int) -> None:
        if page_tokens < 1:
            raise ValueError(f"page_tokens must be ≥ 1, got {page_tokens}")
        self.page_tokens = page_tokens
        self.pages = IdAllocator(capacity=num_pages, what="page")
        self._offsets = np.arange(page_tokens, dtype=np.int64)

    @property
    def num_pages(self) -> int:
        return self.pages.capacity

    @property
    def num_token_slots(self) -> int:
        """Rows a token pool needs: usable tokens + the NULL_PAGE's P padding rows (T + P)."""
        return (self.pages.capacity + 1) * self.page_tokens

    @property
    def num_free_pages(self) -> int:
        return self.pages.num_free

    @property
    def available_tokens(self) -> int:
        return self.pages.num_free * self.page_tokens

    def alloc_pages(self, num_pages: int) -> np.ndarray | None:
        return self.pages.alloc(num_pages)

    def alloc(self, num_tokens: int) -> np.ndarray | None:
        """Token slots of whole fresh pages; `num_tokens` must be a multiple of the page."""
        if num_tokens % self.page_tokens:
            raise ValueError(f"alloc({num_tokens}): not a multiple of the {self.page_tokens}-token page")
        pages = self.pages.alloc(num_tokens // self.page_tokens)
        if pages is None:
            return None
        return self._page_tokens(pages)

    def pages_needed_extend(self, prefix_lens: ArrayLike, seq_lens: ArrayLike) -> int:
        """Fresh pages `alloc_extend` would take (the check of check-then-commit)."""
        prefix, seq = _int64(prefix_lens, "prefix_lens"), _int64(seq_lens, "seq_lens")
        return int(self._extend_shape(prefix, seq)[2].sum())

    def alloc_extend(self, prefix_lens: ArrayLike, seq_lens: ArrayLike,
                     last_locs: ArrayLike) -> np.ndarray | None:
        """Token slots for positions prefix..seq−1 of each request, concatenated in order.

        `last_locs[i]` is the slot of request i's token at position prefix−1; it is read only
        when prefix is not page-aligned (then the unused tail of that page is filled first).
        Returns None, allocating nothing, when the free pages do not suffice.
        """
        prefix, seq = _int64(prefix_lens, "prefix_lens"), _int64(seq_lens, "seq_lens")
        last = _int64(last_locs, "last_locs")
        if last.shape != prefix.shape:
            raise ValueError(f"last_locs has {last.size} entries for {prefix.size} requests")
        if prefix.size == 1:
            return self._extend_one(int(prefix[0]), int(seq[0]), int(last[0]))
        extend, in_tail, new_pages = self._extend_shape(prefix, seq)
        has_tail = in_tail > 0
        if has_tail.any():
            self._check_last(last[has_tail], prefix[has_tail] - 1)
        pages = self.pages.alloc(int(new_pages.sum()))
        if pages is None:
            return None
        p = self.page_tokens
        # Each request's page table, in position order: the page of its last token when the
        # extension starts inside it, then its fresh pages.
        entries = new_pages + has_tail
        table_start = np.cumsum(entries) - entries
        table = np.empty(int(entries.sum()), dtype=np.int64)
        fresh = np.ones(table.size, dtype=bool)
        fresh[table_start[has_tail]] = False
        table[~fresh] = last[has_tail] // p
        table[fresh] = pages
        # Token j of request i sits at position v = prefix_i + j, on entry v // P − prefix_i // P
        # of that table, at offset v % P.
        pos = np.arange(int(extend.sum())) + np.repeat(prefix - (np.cumsum(extend) - extend), extend)
        entry = np.repeat(table_start - prefix // p, extend) + pos // p
        return table[entry] * p + pos % p

    def alloc_decode(self, seq_lens: ArrayLike, last_locs: ArrayLike) -> np.ndarray | None:
        """One slot per request for its token at position seq−1 (seq counts the new token)."""
        seq, last = _int64(seq_lens, "seq_lens"), _int64(last_locs, "last_locs")
        if seq.shape != last.shape:
            raise ValueError(f"last_locs has {last.size} entries for {seq.size} requests")
        if seq.size and int(seq.min()) < 1:
            raise ValueError("seq_lens must count the new token (≥ 1)")
        p = self.page_tokens
        offset = (seq - 1) % p  # the new token's offset in its page
        opens = offset == 0
        locs = last + 1
        # A token that does not open a page lands right after its predecessor, in a held page.
        fits = (locs % p == offset) & self.pages.is_allocated(locs // p)
        if not (fits | opens).all():
            raise AllocatorError("a last_loc does not match its position or lies in a free page")
        num_open = int(np.count_nonzero(opens))
        if num_open:
            pages = self.pages.alloc(num_open)
            if pages is None:
                return None
            locs[opens] = pages * p
        return locs

    def free(self, token_locs: ArrayLike) -> None:
        """Free the pages holding these token slots (SGLang frees unique(loc // page_size)).

        O(slots given): a page listed more than once is freed once, found without sorting
        (`IdAllocator.free_each`); every page must be allocated, else AllocatorError.
        """
        pages = _int64(token_locs, "token_locs")
        if self.page_tokens > 1:
            pages = pages // self.page_tokens
            if pages.size > 1:
                # A request's slots come in runs of one page: keep one entry per run first.
                runs = np.empty(pages.size, dtype=bool)
                runs[0] = True
                np.not_equal(pages[1:], pages[:-1], out=runs[1:])
                pages = pages[runs]
        self.pages.free_each(pages)

    def free_pages(self, pages: ArrayLike) -> None:
        self.pages.free(pages)

    def check_integrity(self) -> None:
        self.pages.check_integrity()
        if self.num_token_slots != (self.num_pages + 1) * self.page_tokens:
            raise IntegrityError("token slots != (pages + NULL_PAGE) × page_tokens")

    def _page_tokens(self, pages: np.ndarray) -> np.ndarray:
        return (pages[:, None] * self.page_tokens + self._offsets).reshape(-1)

    def _extend_one(self, prefix: int, seq: int, last: int) -> np.ndarray | None:
        """`alloc_extend` of one request in scalars: chunked prefill's usual call, ~3x faster."""
        p = self.page_tokens
        if not 0 <= prefix <= seq:
            raise ValueError("need 0 ≤ prefix_lens ≤ seq_lens for every request")
        in_tail = min(seq - prefix, -prefix % p)
        if in_tail and (last % p != (prefix - 1) % p or not self.pages.is_allocated(last // p)):
            raise AllocatorError(f"last_loc {last} does not match position {prefix - 1} "
                                 "or lies in a free page")
        fresh_tokens = seq - prefix - in_tail
        pages = self.pages.alloc(-(-fresh_tokens // p))
        if pages is None:
            return None
        fresh = self._page_tokens(pages)[:fresh_tokens]
        if not in_tail:
            return fresh
        return np.concatenate((np.arange(last + 1, last + 1 + in_tail, dtype=np.int64), fresh))

    def _extend_shape(self, prefix: np.ndarray,
                      seq: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if prefix.shape != seq.shape:
            raise ValueError(f"{prefix.size} prefix_lens for {seq.size} seq_lens")
        extend = seq - prefix
        if prefix.size and (int(prefix.min()) < 0 or int(extend.min()) < 0):
            raise ValueError("need 0 ≤ prefix_lens ≤ seq_lens for every request")
        room = (-prefix) % self.page_tokens  # unused slots left in the last page
        in_tail = np.minimum(extend, room)
        new_pages = -(-(extend - in_tail) // self.page_tokens)
        return extend, in_tail, new_pages

    def _check_last(self, last: np.ndarray, positions: np.ndarray) -> None:
        """The slot given as a request's last token must sit where its position says."""
        if (last % self.page_tokens != positions % self.page_tokens).any():
            raise AllocatorError("a last_loc's page offset does not match its position")
        if not self.pages.is_allocated(last // self.page_tokens).all():
            raise AllocatorError("a last_loc lies in a page that is not allocated")
