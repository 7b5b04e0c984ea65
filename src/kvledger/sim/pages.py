"""Page keys: one int64 per full page of a prompt, equal exactly when the pages' tokens are.

The prefix tree matches page by page, so the simulator hands it one key per page instead of
`page_tokens` token ids. A page of consecutive token ids (one segment, no boundary inside) is
keyed by its first token id, a non-negative number. Any other page (it straddles a segment
boundary) gets an interned negative key, so keys of different contents never collide.

Why first and last id suffice: token ids are `segment << 20 | offset` with segments shorter
than 2^19 tokens, so a page whose last id is its first + page_tokens − 1 lies in one segment
(crossing into another segment moves the id by about 2^20).

Only full pages get keys: the cache holds page-aligned prefixes only.

>>> from kvledger.sim.workload import Request
>>> keyer = PageKeyer(page_tokens=4)
>>> r = Request(rid=0, arrival_ms=0.0, segment_ids=(1, 2), segment_tokens=(6, 7), output_tokens=3)
>>> keys = keyer.keys(r)   # 16 tokens: 6 of segment 1, 7 of segment 2, 3 of the output
>>> len(keys), int(keys[0]) == 1 << 20, int(keys[1]) < 0, int(keys[2]) == (2 << 20) + 2
(4, True, True, True)
>>> int(keys[3]) < 0   # the last page holds the prompt's last token and the output
True
"""

from __future__ import annotations

import numpy as np

from kvledger.sim.workload import MAX_SEGMENT_TOKENS, Request, sequence_token_ids


class PageKeyer:
    """Turns prompts into page keys for one page size; interns straddling pages."""

    def __init__(self, page_tokens: int) -> None:
        if not 0 < page_tokens <= MAX_SEGMENT_TOKENS:
            raise ValueError(f"page_tokens {page_tokens}: expected 1..{MAX_SEGMENT_TOKENS}")
        self.page_tokens = page_tokens
        self._straddle_to_key: dict[bytes, int] = {}

    @property
    def num_interned(self) -> int:
        return len(self._straddle_to_key)

    def keys(self, request: Request) -> np.ndarray:
        """int64 keys of the full pages of prompt + output (total_tokens // page_tokens)."""
        page = self.page_tokens
        num_pages = request.total_tokens // page
        tokens = sequence_token_ids(request)[: num_pages * page].reshape(num_pages, page)
        keys = tokens[:, 0].copy()
        straddling = np.flatnonzero(tokens[:, -1] - tokens[:, 0] != page - 1)
        for row in straddling.tolist():
            content = tokens[row].tobytes()
            key = self._straddle_to_key.get(content)
            if key is None:
                key = -1 - len(self._straddle_to_key)
                self._straddle_to_key[content] = key
            keys[row] = key
        return keys
