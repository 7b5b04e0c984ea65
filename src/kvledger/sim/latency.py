"""Latency of a replay's finished requests: TTFT, TPOT, throughput.

TTFT is arrival → the end of the step that ran the prompt's last chunk (the first token is
sampled by that pass); TPOT is the mean gap between later tokens, (finish − first token) /
(output − 1), over requests with at least two output tokens. Percentiles are numpy's
linear interpolation, as SGLang's bench_serving reports them.

>>> from kvledger.sim.metrics import RequestRecord
>>> rs = [RequestRecord(rid=i, arrival_ms=0.0, admitted_ms=0.0, first_token_ms=10.0 * (i + 1),
...                     finished_ms=10.0 * (i + 1) + 90.0, prompt_tokens=100, output_tokens=10,
...                     hit_tokens=0, usable_hit_tokens=0) for i in range(4)]
>>> s = LatencyStats.of(rs, duration_ms=1000.0)
>>> s.ttft_ms.mean, s.ttft_ms.p50, s.ttft_ms.p95, s.tpot_ms.p50, s.output_tokens_per_s
(25.0, 25.0, 38.5, 10.0, 40.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kvledger.sim.metrics import RequestRecord


@dataclass(frozen=True, slots=True, kw_only=True)
class Percentiles:
    mean: float
    p50: float
    p95: float
    p99: float

    @classmethod
    def of(cls, values: np.ndarray) -> Percentiles:
        if not len(values):
            return cls(mean=0.0, p50=0.0, p95=0.0, p99=0.0)
        p50, p95, p99 = np.percentile(values, [50, 95, 99]).tolist()
        return cls(mean=round(float(values.mean()), 6), p50=round(p50, 6), p95=round(p95, 6),
                   p99=round(p99, 6))


@dataclass(frozen=True, slots=True, kw_only=True)
class LatencyStats:
    ttft_ms: Percentiles
    tpot_ms: Percentiles
    output_tokens_per_s: float  # finished requests' output over the simulated time
    total_tokens_per_s: float  # prompt + output likewise

    @classmethod
    def of(cls, records: Sequence[RequestRecord], *, duration_ms: float) -> LatencyStats:
        ttft = np.array([r.first_token_ms - r.arrival_ms for r in records], dtype=np.float64)
        tpot = np.array([(r.finished_ms - r.first_token_ms) / (r.output_tokens - 1)
                         for r in records if r.output_tokens > 1], dtype=np.float64)
        out = sum(r.output_tokens for r in records)
        total = out + sum(r.prompt_tokens for r in records)
        seconds = duration_ms / 1e3
        return cls(ttft_ms=Percentiles.of(ttft), tpot_ms=Percentiles.of(tpot),
                   output_tokens_per_s=round(out / seconds, 6) if seconds else 0.0,
                   total_tokens_per_s=round(total / seconds, 6) if seconds else 0.0)
