"""Per-replica and fleet figures of a fleet replay, and its overload verdict.

Fleet hit rates pool the replicas' tokens; latency pools every finished request over the
longest replica's simulated time. Load imbalance is the busiest replica's computed tokens
(prefill + decode) over the mean (1.0 = even; R = one replica did everything).

>>> imbalance([30, 10, 20])
1.5
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kvledger.sim.fleet.capacity import (
    Overload,
    ServiceRates,
    overload_verdict,
    queue_grows,
    service_rates,
)
from kvledger.sim.fleet.run import FleetResult
from kvledger.sim.latency import LatencyStats
from kvledger.sim.metrics import HitRates, RequestRecord, SimSummary


def imbalance(loads: Sequence[int]) -> float:
    mean = sum(loads) / len(loads) if loads else 0
    return round(max(loads) / mean, 6) if mean else 1.0


@dataclass(frozen=True, slots=True, kw_only=True)
class FleetSummary(HitRates):
    router: str
    replicas: tuple[SimSummary, ...]
    requests: int
    finished: int
    prompt_tokens: int
    hit_tokens: int
    usable_hit_tokens: int
    load_imbalance: float
    latency: LatencyStats | None
    duration_ms: float
    wall_s: float
    rates: ServiceRates  # one replica
    offered_prefill_tokens_per_s: float | None  # None: every request arrives at once
    offered_decode_tokens_per_s: float | None
    overload: Overload
    timing: str



@dataclass(frozen=True, slots=True, kw_only=True)
class LoadVerdict:
    """Offered load against what the replicas serve (`capacity`), for one rank or a fleet."""

    rates: ServiceRates  # one replica
    offered_prefill_tokens_per_s: float | None  # None: every request arrives at once
    offered_decode_tokens_per_s: float | None
    overload: Overload


def assess(sums: Sequence[SimSummary], records: Sequence[RequestRecord], timer, *,
           chunk_tokens: int) -> LoadVerdict:
    """The verdict of replicas `sums` whose finished requests are `records`; the work offered
    is what they computed over the arrival span of those requests."""
    prefill = sum(s.counters.prefill_tokens for s in sums)
    decode = sum(s.counters.decode_tokens for s in sums)
    mean_ctx = (sum(r.prompt_tokens + r.output_tokens / 2 for r in records) / len(records)
                if records else 1)
    rates = service_rates(timer, chunk_tokens=chunk_tokens,
                          running=sums[0].max_running_requests, context_tokens=int(mean_ctx))
    arrivals = [r.arrival_ms for r in records]
    span_s = (max(arrivals) - min(arrivals)) / 1e3 if arrivals else 0.0
    if span_s > 0:
        off_p, off_d = prefill / span_s, decode / span_s
        busy = off_p / rates.prefill_tokens_per_s + off_d / rates.decode_tokens_per_s
    else:
        off_p = off_d = None
        busy = float("inf")
    return LoadVerdict(rates=rates, offered_prefill_tokens_per_s=off_p,
                       offered_decode_tokens_per_s=off_d,
                       overload=overload_verdict(busy=busy, replicas=len(sums),
                                                 queue_grows=queue_grows(records)))


def summarize(fleet: FleetResult, *, chunk_tokens: int) -> FleetSummary:
    sums = tuple(r.summary for r in fleet.replicas)
    records = [rec for r in fleet.replicas for rec in r.requests]
    duration = max(s.duration_ms for s in sums)
    v = assess(sums, records, fleet.timer, chunk_tokens=chunk_tokens)
    return FleetSummary(
        router=fleet.router.value, replicas=sums, requests=len(fleet.workload.requests),
        finished=sum(s.counters.finished for s in sums),
        prompt_tokens=sum(s.counters.prompt_tokens for s in sums),
        hit_tokens=sum(s.counters.hit_tokens for s in sums),
        usable_hit_tokens=sum(s.counters.usable_hit_tokens for s in sums),
        load_imbalance=imbalance([s.counters.prefill_tokens + s.counters.decode_tokens
                                  for s in sums]),
        latency=LatencyStats.of(records, duration_ms=duration) if records else None,
        duration_ms=duration, wall_s=fleet.wall_s, rates=v.rates,
        offered_prefill_tokens_per_s=v.offered_prefill_tokens_per_s,
        offered_decode_tokens_per_s=v.offered_decode_tokens_per_s, overload=v.overload,
        timing=fleet.timing)
