"""What a generator draws from: the parameters every generator shares, one seeded stream of
lengths, gaps and fresh segment ids, and the turn record it produces
(`kvledger.sim.generators` makes turns into requests).

Lengths are log-normal with the given mean (mu = ln(mean) − sigma²/2), clamped to
[1, cap]; gaps are exponential with the given mean.

>>> d = Draw(seed=0)
>>> d.segment(100), d.segment(5)
((1, 100), (2, 5))
>>> 1 <= d.length(300) <= 32_000
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True, kw_only=True)
class GeneratorParams:
    num_requests: int = 1_000
    seed: int = 0
    rate_per_s: float = 1.0  # sessions (chat, task) or single requests started per second


@dataclass(frozen=True, slots=True, kw_only=True)
class Turn:
    arrival_ms: float
    segments: tuple[tuple[int, int], ...]  # (segment id, tokens)
    output_tokens: int
    output_segment_id: int | None = None  # set when the answer reappears in a later prompt


class Draw:
    """Random lengths and fresh segment ids from one seeded stream."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self._next_segment = 0

    def segment(self, tokens: int) -> tuple[int, int]:
        self._next_segment += 1
        return self._next_segment, tokens

    def length(self, mean_tokens: float, sigma: float = 0.6, cap: int = 32_000) -> int:
        value = self.rng.lognormal(np.log(mean_tokens) - sigma * sigma / 2, sigma)
        return int(min(max(round(value), 1), cap))

    def gap_ms(self, mean_s: float) -> float:
        return float(self.rng.exponential(mean_s * 1_000))
