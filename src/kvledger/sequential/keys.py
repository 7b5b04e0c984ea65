"""Prompt page keys for a sequential replay: one int64 per full page, equal iff the tokens are.

A Mooncake trace names each 512-token block of a prompt by a hash id; equal ids are equal
tokens and a partial last block is a prefix of the full block with that id (the oracle's
expansion: token ``p`` is ``(H[p // 512] * 512 + p % 512) % MOD + 1``). When the page divides
the block, page ``j`` lies inside block ``j // k`` (``k = 512 / page`` pages per block) at
page offset ``j % k``, so ``H · k + j % k`` keys it exactly, with no token expansion.

Any other page (640 tokens, say) covers the tokens ``[j·P, (j+1)·P)``: from offset
``j·P mod 512`` of block ``⌊j·P / 512⌋`` through block ``⌊((j+1)·P − 1) / 512⌋``. A token id
names its block and offset, so two full pages hold the same tokens exactly when they start
at the same offset of their first block and cover the same block ids; that tuple is
interned once per trace (keys 0, 1, 2, …), again with no token expansion.

>>> from kvledger.sim.workload import Request
>>> r = Request(rid=0, arrival_ms=0.0, segment_ids=(7, 9), segment_tokens=(512, 200),
...             output_tokens=4)
>>> keyer = PromptKeyer(page_tokens=64)
>>> keyer.keys(r).tolist()  # 8 pages of block 7, then 3 full pages of block 9
[56, 57, 58, 59, 60, 61, 62, 63, 72, 73, 74]
>>> PromptKeyer(page_tokens=1).keys(r)[[0, 511, 512]].tolist()
[3584, 4095, 4608]
>>> PromptKeyer(page_tokens=640).keys(r).tolist()  # one full page: blocks 7 and 9 from 0
[0]
"""

from __future__ import annotations

import numpy as np

from kvledger.sim.trace import TRACE_PAGE_TOKENS
from kvledger.sim.workload import Request


class PromptKeyer:
    """Keys of a prompt's full pages (outputs are not part of a sequential replay)."""

    def __init__(self, page_tokens: int) -> None:
        if isinstance(page_tokens, bool) or not isinstance(page_tokens, int) or page_tokens < 1:
            raise ValueError(f"--page-size {page_tokens!r}: expected a positive integer")
        self.page_tokens = page_tokens
        self._aligned = TRACE_PAGE_TOKENS % page_tokens == 0
        self._per_block = TRACE_PAGE_TOKENS // page_tokens
        self._offsets = np.arange(self._per_block, dtype=np.int64)
        self._spans: list[tuple[int, int, int]] = []  # page j: (offset, first block, end block)
        self._interned: dict[tuple[int, ...], int] = {}

    def keys(self, request: Request) -> np.ndarray:
        num_pages = request.prompt_tokens // self.page_tokens
        if not self._aligned:
            return self._straddling_keys(request.segment_ids, num_pages)
        per_block = self._per_block
        ids = np.asarray(request.segment_ids, dtype=np.int64) * per_block
        # Row b holds block b's page keys; a partial last block keeps only its full pages.
        return (ids[:, None] + self._offsets).reshape(-1)[:num_pages]

    def _straddling_keys(self, ids: tuple[int, ...], num_pages: int) -> np.ndarray:
        spans, interned = self._spans, self._interned
        page = self.page_tokens
        for j in range(len(spans), num_pages):
            first, offset = divmod(j * page, TRACE_PAGE_TOKENS)
            spans.append((offset, first, ((j + 1) * page - 1) // TRACE_PAGE_TOKENS + 1))
        keys = [interned.setdefault((offset, *ids[first:end]), len(interned))
                for offset, first, end in spans[:num_pages]]
        return np.array(keys, dtype=np.int64)
