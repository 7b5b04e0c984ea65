"""Requests and workloads: prompts as runs of shared token segments, never as token lists.

A prompt is a sequence of segments: `(segment_id, length_tokens)`. Token `j` of segment `s`
is the integer `s·2^20 + j`, so equal segment ids mean equal tokens (a shareable prefix) and
distinct segments never collide. A Mooncake trace's 512-token prefix pages are segments (the
hash id is the segment id); a generator's system prompt, user turn or model output is one.

The model's output is one more segment after the prompt. A generator that feeds an answer
back into the next turn's prompt names it (`output_segment_id`), so the next turn can hit the
pages the answer left in the cache; otherwise the output gets an id of its own from the top
half of the id space, which no prompt uses.

Assumptions:
1. A segment is shorter than 2^19 tokens and its id below 2^43 (ids fit an int64); the
   margin below 2^20 is what lets `kvledger.sim.pages` tell a run of consecutive tokens from
   its first and last id alone.
2. The same segment id always starts at offset 0 (a segment is never entered midway).

>>> r = Request(rid=0, arrival_ms=0.0, segment_ids=(7, 9), segment_tokens=(3, 2), output_tokens=1)
>>> r.prompt_tokens, sequence_token_ids(r)[:5].tolist() == [7 << 20, (7 << 20) + 1,
...                                                         (7 << 20) + 2, 9 << 20, (9 << 20) + 1]
(5, True)
>>> int(sequence_token_ids(r)[5]) >> SEGMENT_SHIFT == OUTPUT_SEGMENT_BASE
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

SEGMENT_SHIFT = 20  # token id = segment id << 20 | offset
MAX_SEGMENT_TOKENS = 1 << (SEGMENT_SHIFT - 1)
MAX_SEGMENT_ID = 1 << (63 - SEGMENT_SHIFT)
PROMPT_SEGMENT_LIMIT = MAX_SEGMENT_ID // 2  # prompt segments below; unnamed outputs above
OUTPUT_SEGMENT_BASE = PROMPT_SEGMENT_LIMIT


class WorkloadError(ValueError):
    """A workload that cannot be replayed; the message names the request and field."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Request:
    rid: int
    arrival_ms: float
    segment_ids: tuple[int, ...]
    segment_tokens: tuple[int, ...]  # length of each segment in this prompt
    output_tokens: int
    output_segment_id: int | None = None  # None: an id no prompt shares

    def __post_init__(self) -> None:
        where = f"request {self.rid}"
        if len(self.segment_ids) != len(self.segment_tokens):
            raise WorkloadError(f"{where}: {len(self.segment_ids)} segment ids but "
                                f"{len(self.segment_tokens)} segment lengths")
        if not self.segment_ids:
            raise WorkloadError(f"{where}: empty prompt")
        if any(not 0 < n < MAX_SEGMENT_TOKENS for n in self.segment_tokens):
            raise WorkloadError(f"{where}: segment lengths must be in 1..{MAX_SEGMENT_TOKENS - 1}")
        if any(not 0 <= s < PROMPT_SEGMENT_LIMIT for s in self.segment_ids):
            raise WorkloadError(f"{where}: segment ids must be in 0..{PROMPT_SEGMENT_LIMIT - 1}")
        if not 0 <= self.output_tokens < MAX_SEGMENT_TOKENS:
            raise WorkloadError(f"{where}: output_tokens must be in 0..{MAX_SEGMENT_TOKENS - 1}")
        if self.output_segment_id is not None and not 0 <= self.output_segment_id < PROMPT_SEGMENT_LIMIT:
            raise WorkloadError(f"{where}: output_segment_id must be in 0..{PROMPT_SEGMENT_LIMIT - 1}")
        if self.rid < 0 or self.rid >= OUTPUT_SEGMENT_BASE:
            raise WorkloadError(f"{where}: rid out of range")
        if not (math.isfinite(self.arrival_ms) and self.arrival_ms >= 0):
            # A NaN arrival never compares due: the replay would wait for it forever.
            raise WorkloadError(f"{where}: arrival_ms {self.arrival_ms}: expected a finite "
                                "number ≥ 0")

    @property
    def prompt_tokens(self) -> int:
        return sum(self.segment_tokens)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.output_tokens


@dataclass(frozen=True, slots=True, kw_only=True)
class Workload:
    """Requests ordered by arrival; `name` says where they came from."""

    name: str
    requests: tuple[Request, ...]

    def __post_init__(self) -> None:
        arrivals = [r.arrival_ms for r in self.requests]
        if arrivals != sorted(arrivals):
            raise WorkloadError(f"{self.name}: requests are not ordered by arrival")

    @property
    def prompt_tokens(self) -> int:
        return sum(r.prompt_tokens for r in self.requests)

    @property
    def output_tokens(self) -> int:
        return sum(r.output_tokens for r in self.requests)

    def head(self, num_requests: int) -> Workload:
        return Workload(name=self.name, requests=self.requests[:num_requests])

    def stretched(self, factor: float) -> Workload:
        """Arrivals `factor` times further apart (2.0 halves the request rate)."""
        if not (factor > 0 and math.isfinite(factor)):
            raise WorkloadError(f"--time-scale {factor}: expected a positive finite factor")
        return Workload(name=f"{self.name} (time ×{factor:g})" if factor != 1 else self.name,
                        requests=tuple(replace(r, arrival_ms=r.arrival_ms * factor)
                                       for r in self.requests))

    def share(self, rank: int, num_ranks: int) -> Workload:
        """The requests a round-robin router sends to `rank` of `num_ranks`."""
        return Workload(name=f"{self.name} (rank {rank} of {num_ranks})",
                        requests=self.requests[rank::num_ranks])


def sequence_token_ids(request: Request) -> np.ndarray:
    """Token ids (int64) of the prompt then the output, by array arithmetic."""
    ids = list(request.segment_ids)
    lens = list(request.segment_tokens)
    if request.output_tokens:
        out = request.output_segment_id
        ids.append(OUTPUT_SEGMENT_BASE + request.rid if out is None else out)
        lens.append(request.output_tokens)
    id_array = np.asarray(ids, dtype=np.int64)
    len_array = np.asarray(lens, dtype=np.int64)
    starts = np.cumsum(len_array) - len_array
    offsets = np.arange(int(len_array.sum()), dtype=np.int64) - np.repeat(starts, len_array)
    return (np.repeat(id_array, len_array) << SEGMENT_SHIFT) + offsets
