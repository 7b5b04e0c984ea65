"""FreshCache: the cache-free mode. Every request computes everything itself.

Each running request owns one fixed lane of the device pools: ``lane_pages`` pages of token
slots, one state slot, one request row. Nothing is matched, shared, kept after a request
ends or sent to the host; this is the run whose outputs the cached runs must reproduce.

    token slots:  [ NULL page | lane 0 pages ........ | lane 1 pages ........ | … ]

>>> import numpy as np
>>> from kvledger.engine.config import TinyConfig
>>> cache = FreshCache(TinyConfig(), max_running_requests=2, max_context_tokens=40, page_tokens=16)
>>> req = Request(rid=0, prompt=np.arange(30), max_new_tokens=5)
>>> cache.admit(req), cache.prepare(req, 30).token_locs[:3].tolist()
(True, [16, 17, 18])
>>> cache.admit(Request(rid=1, prompt=np.arange(40), max_new_tokens=8))
Traceback (most recent call last):
...
ValueError: request 1: 40 prompt + 8 new tokens exceed max_context_tokens=40
"""

from __future__ import annotations

import torch

from kvledger.core.units import cdiv
from kvledger.engine.batch import SeqChunk
from kvledger.engine.config import TinyConfig
from kvledger.engine.memory import PoolSizes, build_device_pools
from kvledger.engine.pool_store import PoolStore
from kvledger.engine.request import Request


class FreshCache:
    def __init__(self, cfg: TinyConfig, *, max_running_requests: int, max_context_tokens: int,
                 page_tokens: int = 16) -> None:
        self.lane_pages = cdiv(max_context_tokens, page_tokens)
        self.max_context_tokens = max_context_tokens
        sizes = PoolSizes(page_tokens=page_tokens,
                          num_pages=self.lane_pages * max_running_requests,
                          num_state_slots=max_running_requests,
                          max_running_requests=max_running_requests,
                          max_context_tokens=self.lane_pages * page_tokens)
        self.pools = build_device_pools(cfg, sizes)
        self.store = PoolStore(self.pools.kv)
        lane_tokens = self.lane_pages * page_tokens
        self._lane_locs = [torch.arange(page_tokens + lane * lane_tokens,
                                        page_tokens + (lane + 1) * lane_tokens)
                           for lane in range(max_running_requests)]
        self._free_lanes = list(range(max_running_requests - 1, -1, -1))
        self._lane_of: dict[int, int] = {}

    def announce(self, req: Request) -> None:
        return None  # nothing is cached, so nothing reads the queue

    def admit(self, req: Request) -> bool:
        if len(req.prompt) + req.max_new_tokens > self.max_context_tokens:
            raise ValueError(f"request {req.rid}: {len(req.prompt)} prompt + {req.max_new_tokens} "
                             f"new tokens exceed max_context_tokens={self.max_context_tokens}")
        if not self._free_lanes:
            return False
        self._lane_of[req.rid] = self._free_lanes.pop()
        req.computed_tokens = 0
        return True

    def prepare(self, req: Request, num_new_tokens: int) -> SeqChunk:
        lane = self._lane_of[req.rid]
        start = req.computed_tokens
        ids = torch.from_numpy(req.tokens[start:start + num_new_tokens])
        return SeqChunk(input_ids=ids, start_tokens=start,
                        token_locs=self._lane_locs[lane][:start + num_new_tokens],
                        state_slot=lane + 1, tail_row=lane + 1)

    def after_forward(self, req: Request, chunk: SeqChunk) -> None:
        """Nothing is cached in the cache-free mode."""

    def finish(self, req: Request) -> None:
        self._free_lanes.append(self._lane_of.pop(req.rid))

    def check_integrity(self) -> None:
        lanes = sorted(self._free_lanes + list(self._lane_of.values()))
        if lanes != list(range(len(self._lane_locs))):
            raise RuntimeError(f"fresh cache lanes lost or doubled: {lanes}")
        self.pools.check_integrity()
