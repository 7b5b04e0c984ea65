"""Engine: greedy generation with chunked prefill and batched decode over a request cache.

Each step: admit waiting requests in arrival order while the cache says they fit (the first
that does not fit waits, so order is deterministic), then run one forward pass holding every
running request's next token (decode) plus prefill chunks up to ``chunk_tokens`` new prompt
tokens. A prompt longer than the budget is cut into chunks, wherever the budget ends (mid
page, mid kpool group). Requests finish after ``max_new_tokens`` tokens.

The cache decides everything about memory (``RequestCache``): ``HybridCache`` gives prefix
caching, eviction and the host tier; ``FreshCache`` is the cache-free mode.

>>> from kvledger.engine.config import TinyConfig
>>> from kvledger.engine.model import TinyModel
>>> from kvledger.engine.fresh import FreshCache
>>> cfg = TinyConfig()
>>> engine = Engine(TinyModel(cfg), FreshCache(cfg, max_running_requests=2,
...                                            max_context_tokens=64), chunk_tokens=8)
>>> out = engine.generate([[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]], max_new_tokens=3)
>>> len(out[0].token_ids), tuple(out[0].logits.shape), engine.stats.forward_steps
(3, (3, 256), 4)
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from kvledger.engine.model import TinyModel
from kvledger.engine.request import Request, RequestCache


@dataclass(frozen=True, slots=True, kw_only=True)
class Generation:
    rid: int
    token_ids: tuple[int, ...]
    logits: torch.Tensor  # (max_new_tokens, vocab) float32, the logits each token came from
    cached_prompt_tokens: int  # prompt tokens served by the prefix cache


@dataclass(slots=True)
class EngineStats:
    requests: int = 0
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0  # prompt tokens that were not computed (prefix hits)
    computed_tokens: int = 0  # tokens that went through the model
    generated_tokens: int = 0
    forward_steps: int = 0

    @property
    def hit_rate(self) -> float:
        return self.cached_prompt_tokens / self.prompt_tokens if self.prompt_tokens else 0.0


class Engine:
    def __init__(self, model: TinyModel, cache: RequestCache, *, chunk_tokens: int = 64,
                 max_running_requests: int = 8) -> None:
        if chunk_tokens < 1 or max_running_requests < 1:
            raise ValueError("Engine: chunk_tokens and max_running_requests must be ≥ 1")
        self.model = model
        self.cache = cache
        self.chunk_tokens = chunk_tokens
        self.max_running_requests = max_running_requests
        self.stats = EngineStats()
        self._next_rid = 0

    def generate(self, prompts: Sequence[Sequence[int]], max_new_tokens: int) -> list[Generation]:
        """Greedy continuations of ``prompts``, in order; the cache persists across calls."""
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens: expected ≥ 1, got {max_new_tokens}")
        reqs = [self._request(p, max_new_tokens) for p in prompts]
        waiting, running = deque(reqs), []
        for req in reqs:
            self.cache.announce(req)
        while waiting or running:
            while (waiting and len(running) < self.max_running_requests
                   and self.cache.admit(waiting[0])):
                req = waiting.popleft()
                req.cached_prompt_tokens = req.computed_tokens
                running.append(req)
            if not running:
                raise RuntimeError(f"request {waiting[0].rid} does not fit in an empty cache: "
                                   "the pools are too small for it")
            self._step(running)
            for req in [r for r in running if r.finished]:
                self.cache.finish(req)
                running.remove(req)
        for req in reqs:
            self.stats.requests += 1
            self.stats.prompt_tokens += len(req.prompt)
            self.stats.cached_prompt_tokens += req.cached_prompt_tokens
            self.stats.generated_tokens += len(req.output_ids)
        return [Generation(rid=r.rid, token_ids=tuple(r.output_ids),
                           logits=torch.stack(r.output_logits),
                           cached_prompt_tokens=r.cached_prompt_tokens) for r in reqs]

    def _request(self, prompt: Sequence[int], max_new_tokens: int) -> Request:
        array = np.asarray(prompt, dtype=np.int64)
        if array.ndim != 1 or len(array) == 0:
            raise ValueError("prompts: each prompt must be a non-empty sequence of token ids")
        vocab = self.model.cfg.vocab_size
        if int(array.min()) < 0 or int(array.max()) >= vocab:
            raise ValueError(f"prompts: token ids must lie in 0..{vocab - 1}")
        req = Request(rid=self._next_rid, prompt=array, max_new_tokens=max_new_tokens)
        self._next_rid += 1
        return req

    def _step(self, running: list[Request]) -> None:
        plan: list[tuple[Request, int]] = []
        budget = self.chunk_tokens
        for req in running:
            if not req.in_prefill:
                plan.append((req, 1))
            elif budget > 0:
                n = min(budget, len(req.prompt) - req.computed_tokens)
                plan.append((req, n))
                budget -= n
        chunks = [self.cache.prepare(req, n) for req, n in plan]
        logits = self.model.forward(chunks, self.cache.store)
        self.stats.forward_steps += 1
        for (req, n), chunk, row in zip(plan, chunks, logits, strict=True):
            req.computed_tokens += n
            self.stats.computed_tokens += n
            self.cache.after_forward(req, chunk)
            if req.computed_tokens == req.num_tokens:
                req.output_ids.append(int(torch.argmax(row)))
                req.output_logits.append(row)
