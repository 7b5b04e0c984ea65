"""What one replica serves per second, and whether a run was more than the fleet could serve.

Service rates come from the replay's own step-time model (`kvledger.sim.setup.step_timer`):

    prefill_tokens_per_s = chunk / step_ms(one chunk of `chunk` tokens from position 0)
    decode_tokens_per_s  = n / step_ms(n requests decoding at the mean context)
                           with n = the plan's running-request limit N

A replica's busy fraction for a load is prefill/prefill_rate + decode/decode_rate (prefill
and decode share its steps); the work offered is what the run computed (prefill after
cache hits, every decoded token) per second of the arrival span, so it counts the cache.

Saturated: the offered load needs more than the fleet's replicas (busy > R), or the queue
is seen to grow — the median queue wait of the last quarter of arrivals is at least 1.5× that
of the second quarter and over a second. `replicas_needed` is ceil(busy) at the offered
load (at least 1).

>>> overload_verdict(busy=2.5, replicas=2, queue_grows=False).replicas_needed
3
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kvledger.sim.metrics import RequestRecord
from kvledger.sim.timing import StepWork

QUEUE_GROWTH_RATIO = 1.5  # a queue growing from 0 at a steady rate gives 0.875 / 0.375 = 2.33
QUEUE_GROWTH_MIN_MS = 1_000.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ServiceRates:
    prefill_tokens_per_s: float  # one replica
    decode_tokens_per_s: float


def service_rates(timer, *, chunk_tokens: int, running: int, context_tokens: int) -> ServiceRates:
    """One replica's rates under `timer` (a Roofline or a StepCost)."""
    prefill_ms = timer.step_ms(StepWork(prefill_spans=((0, chunk_tokens),)))
    n = max(running, 1)
    decode_ms = timer.step_ms(StepWork(decode_contexts=(max(context_tokens, 1),) * n))
    return ServiceRates(prefill_tokens_per_s=chunk_tokens / prefill_ms * 1e3,
                        decode_tokens_per_s=n / decode_ms * 1e3)


@dataclass(frozen=True, slots=True, kw_only=True)
class Overload:
    busy_replicas: float  # replicas the offered load keeps busy (inf: no arrival span)
    replicas: int
    queue_grows: bool
    replicas_needed: int | None  # None: the span is zero (one burst), no rate to size for

    @property
    def saturated(self) -> bool:
        return self.busy_replicas > self.replicas or self.queue_grows


def overload_verdict(*, busy: float, replicas: int, queue_grows: bool) -> Overload:
    needed = max(1, math.ceil(busy)) if math.isfinite(busy) else None
    return Overload(busy_replicas=busy, replicas=replicas, queue_grows=queue_grows,
                    replicas_needed=needed)


def queue_grows(records: Sequence[RequestRecord]) -> bool:
    """The median queue wait of the last quarter of arrivals ≥ 1.5× the second quarter's and
    over a second: a backlog that builds up instead of draining."""
    if len(records) < 8:
        return False
    ordered = sorted(records, key=lambda r: (r.arrival_ms, r.rid))
    quarter = len(ordered) // 4
    second = np.median([r.queue_ms for r in ordered[quarter:2 * quarter]])
    last = np.median([r.queue_ms for r in ordered[-quarter:]])
    return bool(last > QUEUE_GROWTH_MIN_MS and last >= QUEUE_GROWTH_RATIO * second)

