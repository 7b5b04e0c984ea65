"""Where disaggregation pays: a PD fleet against the aggregated fleet on the same GPUs.

The aggregated fleet is P + D replicas of the aggregated plan behind the same router; both
replay the same requests. Each side's figures: TTFT and TPOT percentiles over its finished
requests, hit rates, and whether it saturated (a queue that only grows; the aggregated side
also by `capacity.overload_verdict`). A change is (PD − aggregated) / aggregated; PD pays on a
percentile where it is lower by more than `PAYS_BY` (1 %), costs where higher by more, and
is even otherwise.

>>> verdict_word(2.0, 2.5), verdict_word(2.5, 2.0), verdict_word(2.0, 2.01)
('pays', 'costs', 'even')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kvledger.sim.fleet.capacity import queue_grows
from kvledger.sim.fleet.pd import PdResult
from kvledger.sim.fleet.summary import FleetSummary
from kvledger.sim.latency import LatencyStats
from kvledger.sim.metrics import RequestRecord

PAYS_BY = 0.01


def verdict_word(pd: float, aggregated: float) -> str:
    if aggregated <= 0:
        return "even"
    change = (pd - aggregated) / aggregated
    return "pays" if change < -PAYS_BY else "costs" if change > PAYS_BY else "even"


@dataclass(frozen=True, slots=True, kw_only=True)
class Side:
    label: str
    replicas: str  # "1 prefill + 1 decode", "2 aggregated"
    gpus: int
    requests: int
    finished: int
    token_hit_rate: float
    usable_hit_rate: float
    latency: LatencyStats | None
    saturated: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class PdComparison:
    pd: Side
    aggregated: Side
    transfer_bytes: int
    transfer_ms: tuple[float, float, float, float]  # per request: mean, p50, p95, p99

    def rows(self) -> list[tuple[str, float, float, str]]:
        """(metric, PD, aggregated, pays/costs/even) for TTFT and TPOT p50/p95/p99."""
        a, p = self.aggregated.latency, self.pd.latency
        if a is None or p is None:
            return []
        out = []
        for name, pick in (("TTFT", lambda s: s.ttft_ms), ("TPOT", lambda s: s.tpot_ms)):
            for q in ("p50", "p95", "p99"):
                pv, av = getattr(pick(p), q), getattr(pick(a), q)
                out.append((f"{name} {q} ms", pv, av, verdict_word(pv, av)))
        return out


def _rates(records: Sequence[RequestRecord]) -> tuple[float, float]:
    prompt = sum(r.prompt_tokens for r in records)
    if not prompt:
        return 0.0, 0.0
    return (sum(r.hit_tokens for r in records) / prompt,
            sum(r.usable_hit_tokens for r in records) / prompt)


def compare_pd(pd: PdResult, aggregated: FleetSummary, *, tp: int) -> PdComparison:
    import numpy as np

    records = list(pd.records)
    hit, usable = _rates(records)
    prefill_records = [rec for r in pd.prefill.replicas for rec in r.requests]
    decode_records = [rec for r in pd.decode.replicas for rec in r.requests]
    p, d = len(pd.prefill.replicas), len(pd.decode.replicas)
    side = Side(label="disaggregated", replicas=f"{p} prefill + {d} decode",
                gpus=(p + d) * tp, requests=len(pd.workload.requests), finished=len(records),
                token_hit_rate=hit, usable_hit_rate=usable,
                latency=LatencyStats.of(records, duration_ms=pd.duration_ms) if records
                else None,
                saturated=queue_grows(prefill_records) or queue_grows(decode_records))
    agg = Side(label="aggregated", replicas=f"{len(aggregated.replicas)} aggregated",
               gpus=len(aggregated.replicas) * tp, requests=aggregated.requests,
               finished=aggregated.finished, token_hit_rate=aggregated.token_hit_rate,
               usable_hit_rate=aggregated.usable_hit_rate, latency=aggregated.latency,
               saturated=aggregated.overload.saturated)
    ms = np.array(pd.transfer_ms, dtype=np.float64)
    quants = ((0.0,) * 4 if not len(ms) else
              (round(float(ms.mean()), 6), *(round(float(x), 6)
                                            for x in np.percentile(ms, [50, 95, 99]))))
    return PdComparison(pd=side, aggregated=agg, transfer_bytes=pd.transfer_bytes,
                        transfer_ms=quants)
