"""A request on its way through the engine: what it holds, what it has computed.

Its sequence (prompt then output) is laid out in pages::

    pages:  |== tree (locked) ==|====== own pages ======|.. reserved, not yet allocated ..|
            0            tree_pages            held_pages               ⌈kv_total_tokens / P⌉
    tokens: 0 ... usable hit ... computed_tokens (prefill) ... kv_tokens (decode)

`tree_pages` come from the prefix cache and are pinned by `receipt`; own pages were allocated
for this request and are its to free or donate. `reserved_pages` is what admission promised
but has not allocated yet, so later admissions cannot overcommit the pool.
"""

from __future__ import annotations

import numpy as np

from kvledger.cache.policies import Ticket
from kvledger.sim.workload import Request
from kvledger.tree.results import LockReceipt

EMPTY = np.zeros(0, dtype=np.int64)


def kv_total_tokens(prompt_tokens: int, output_tokens: int) -> int:
    """KV a request ever holds: its prompt and every output token but the last, which is
    sampled and returned, never fed back (SGLang's kv_committed_len at finish)."""
    return prompt_tokens + max(output_tokens - 1, 0)


class Running:
    __slots__ = (
        "request", "prompt_tokens", "output_tokens", "seq_keys", "tree_page_ids", "own_pages",
        "num_own_pages", "covered_tokens", "receipt", "slots", "computed_tokens",
        "generated_tokens", "last_track_tokens", "branching_tokens", "reserved_pages",
        "admitted_ms", "first_token_ms", "hit_tokens", "usable_hit_tokens", "ticket",
    )

    def __init__(self, *, request: Request, seq_keys: np.ndarray) -> None:
        self.request = request
        self.prompt_tokens = request.prompt_tokens
        self.output_tokens = request.output_tokens
        self.seq_keys = seq_keys  # page keys of prompt + output (full pages only)
        self.tree_page_ids = EMPTY  # page ids of the locked cached prefix
        self.own_pages: list[np.ndarray] = []
        self.num_own_pages = 0
        self.covered_tokens = 0  # tokens the held pages can store: held_pages · page_tokens
        self.receipt: LockReceipt | None = None
        self.slots: list[int] = []  # working slot first, then checkpoint track slots
        self.computed_tokens = 0  # prompt tokens whose KV exists (cached or computed)
        self.generated_tokens = 0
        self.last_track_tokens: int | None = None  # where a track slot holds a state
        self.branching_tokens: int | None = None  # where the tree asked for a state
        self.reserved_pages = 0
        self.admitted_ms = 0.0
        self.first_token_ms = 0.0
        self.ticket: Ticket | None = None  # what state admission decided at admission
        self.hit_tokens = 0  # cached KV found at admission
        self.usable_hit_tokens = 0  # of which backed by a state

    @property
    def kv_total_tokens(self) -> int:
        return kv_total_tokens(self.prompt_tokens, self.output_tokens)

    @property
    def tree_pages(self) -> int:
        return len(self.tree_page_ids)

    @property
    def held_pages(self) -> int:
        return len(self.tree_page_ids) + self.num_own_pages

    @property
    def in_prefill(self) -> bool:
        return self.computed_tokens < self.prompt_tokens

    @property
    def kv_tokens(self) -> int:
        """Tokens whose KV exists: the last sampled token is fed (and cached) next step."""
        return self.computed_tokens + max(self.generated_tokens - 1, 0)

    def take_own(self) -> np.ndarray:
        """All own pages as one array (and keep them as one chunk)."""
        if len(self.own_pages) > 1:
            self.own_pages = [np.concatenate(self.own_pages)]
        return self.own_pages[0] if self.own_pages else EMPTY

    def add_own(self, pages: np.ndarray) -> None:
        self.own_pages.append(pages)
        self.num_own_pages += len(pages)

    def page_ids(self, num_pages: int) -> np.ndarray:
        """Page ids of the first `num_pages` pages of the sequence (tree prefix, then own)."""
        assert num_pages <= self.held_pages, "asking for pages the request does not hold"
        own = self.take_own()
        return np.concatenate([self.tree_page_ids, own[: num_pages - self.tree_pages]])
