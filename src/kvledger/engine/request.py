"""A request's progress, and the contract between the engine loop and a request cache.

Token strip of a request (``|`` = what the cache holds for it)::

    prompt ............................ | outputs ........
    0        cached_prompt_tokens        len(prompt)       len(tokens)
    |======== hit ======|--- computed ---|--- decoded ---|·  ← next input: tokens[computed]
                                         computed_tokens = len(tokens) − 1 while decoding

The last generated token is never fed to the model (nothing needs its KV).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import torch

from kvledger.engine.batch import ModelStore, SeqChunk


@dataclass(slots=True, kw_only=True)
class Request:
    rid: int
    prompt: np.ndarray  # int64 token ids
    max_new_tokens: int
    output_ids: list[int] = field(default_factory=list)
    output_logits: list[torch.Tensor] = field(default_factory=list)
    computed_tokens: int = 0  # tokens whose KV and state the cache holds for this request
    cached_prompt_tokens: int = 0  # of those, how many came from the prefix cache

    @property
    def tokens(self) -> np.ndarray:
        return np.concatenate([self.prompt, np.asarray(self.output_ids, dtype=np.int64)])

    @property
    def num_tokens(self) -> int:
        return len(self.prompt) + len(self.output_ids)

    @property
    def final_tokens(self) -> int:
        """Tokens whose KV this request will have computed when it finishes."""
        return len(self.prompt) + self.max_new_tokens - 1

    @property
    def in_prefill(self) -> bool:
        return self.computed_tokens < len(self.prompt)

    @property
    def finished(self) -> bool:
        return len(self.output_ids) >= self.max_new_tokens


class RequestCache(Protocol):
    """What the engine loop needs from a cache; every method but ``admit`` must succeed.

    ``admit`` is check-then-commit: False (and no change) when the request does not fit now;
    once admitted, a request's later ``prepare`` calls are guaranteed to find memory.
    """

    store: ModelStore

    def announce(self, req: Request) -> None:
        """``req`` joined the waiting queue (queue-reading state policies see it)."""

    def admit(self, req: Request) -> bool:
        """Reserve what ``req`` needs to finish; set its ``computed_tokens`` to the prefix hit."""

    def prepare(self, req: Request, num_new_tokens: int) -> SeqChunk:
        """Slots for the next ``num_new_tokens`` tokens, and where to save states."""

    def after_forward(self, req: Request, chunk: SeqChunk) -> None:
        """The chunk ran: cache what can be cached now (unfinished requests)."""

    def finish(self, req: Request) -> None:
        """Cache the finished request and release everything it holds."""

    def check_integrity(self) -> None: ...
