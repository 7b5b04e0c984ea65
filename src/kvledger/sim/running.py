"""A request on its way through the simulated engine: its schedule, and the facade's record.

What the request holds in memory (pages, slots, its locked prefix) lives in the cache
facade's `CacheSeq` (`kvledger.cache.seq`), set at admission; this keeps what the scheduler
needs besides: the page keys of its sequence, how many tokens it generated, when it started.
"""

from __future__ import annotations

import numpy as np

from kvledger.cache.seq import CacheSeq
from kvledger.sim.workload import Request


def kv_total_tokens(prompt_tokens: int, output_tokens: int) -> int:
    """KV a request ever holds: its prompt and every output token but the last, which is
    sampled and returned, never fed back (SGLang's kv_committed_len at finish)."""
    return prompt_tokens + max(output_tokens - 1, 0)


class Running:
    __slots__ = ("request", "prompt_tokens", "output_tokens", "seq_keys", "seq",
                 "generated_tokens", "admitted_ms", "first_token_ms", "free_slots_at_match",
                 "free_pages_at_match")

    def __init__(self, *, request: Request, seq_keys: np.ndarray) -> None:
        self.request = request
        self.prompt_tokens = request.prompt_tokens
        self.output_tokens = request.output_tokens
        self.seq_keys = seq_keys  # page keys of prompt + output (full pages only)
        self.seq: CacheSeq | None = None  # the cache's record, from admission on
        self.generated_tokens = 0
        self.admitted_ms = 0.0
        self.first_token_ms = 0.0  # end of the step that ran the prompt's last chunk
        self.free_slots_at_match = 0  # device state slots no running request held then
        self.free_pages_at_match = 0  # device pages no running request owned then

    @property
    def kv_total_tokens(self) -> int:
        return kv_total_tokens(self.prompt_tokens, self.output_tokens)

    @property
    def in_prefill(self) -> bool:
        return self.seq is None or self.seq.computed_tokens < self.prompt_tokens
