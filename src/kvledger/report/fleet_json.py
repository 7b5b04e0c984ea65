"""The `kvledger simulate --replicas R --json` document.

Schema `kvledger.simulate-fleet/1`, inside the common envelope (`core.envelope`):

    workload, router, replicas (R),
    fleet{requests, finished, tokens{prompt, hit, usable_hit}, rates{token_hit, usable_hit},
          load_imbalance, latency{saturated, ttft_ms{mean, p50, p95, p99}, tpot_ms{…},
          output_tokens_per_s, total_tokens_per_s} (ttft_ms/tpot_ms null when nothing
          finished), time{simulated_ms, wall_s}},
    overload{saturated, queue_grows, busy_replicas (null: one burst), replicas_needed (null
             likewise), offered_prefill_tokens_per_s, offered_decode_tokens_per_s,
             replica_prefill_tokens_per_s, replica_decode_tokens_per_s, timing},
    per_replica[{replica, requests, finished, unfinished, rates{token_hit, usable_hit},
                 prefill_computed, decoded, latency{…as the fleet's}}]

`latency.saturated` repeats `overload.saturated`: latency figures of a saturated run grow
with the trace's length and say nothing about the fleet at a sustainable load.
"""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any

from kvledger.core.envelope import envelope
from kvledger.report import hit_rates
from kvledger.sim.fleet.summary import FleetSummary, LoadVerdict
from kvledger.sim.latency import LatencyStats


def _latency(lat: LatencyStats | None, saturated: bool) -> dict[str, Any]:
    if lat is None:
        return {"saturated": saturated, "ttft_ms": None, "tpot_ms": None,
                "output_tokens_per_s": 0.0, "total_tokens_per_s": 0.0}
    return {"saturated": saturated, "ttft_ms": asdict(lat.ttft_ms),
            "tpot_ms": asdict(lat.tpot_ms), "output_tokens_per_s": lat.output_tokens_per_s,
            "total_tokens_per_s": lat.total_tokens_per_s}


def _rate(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def overload_json(v: FleetSummary | LoadVerdict, timing: str | None = None) -> dict[str, Any]:
    """The `overload` block, in `simulate --replicas` and (one rank) `simulate` alike."""
    o = v.overload
    return {"saturated": o.saturated, "queue_grows": o.queue_grows,
            "busy_replicas": round(o.busy_replicas, 4) if math.isfinite(o.busy_replicas)
            else None,
            "replicas_needed": o.replicas_needed,
            "offered_prefill_tokens_per_s": _rate(v.offered_prefill_tokens_per_s),
            "offered_decode_tokens_per_s": _rate(v.offered_decode_tokens_per_s),
            "replica_prefill_tokens_per_s": round(v.rates.prefill_tokens_per_s, 3),
            "replica_decode_tokens_per_s": round(v.rates.decode_tokens_per_s, 3),
            "timing": timing if timing is not None else getattr(v, "timing", "")}


def fleet_json(f: FleetSummary, *, ignored_flags: tuple[str, ...] = (),
               notes: tuple[str, ...] = ()) -> dict[str, Any]:
    sat = f.overload.saturated
    body = {
        "workload": f.replicas[0].workload, "router": f.router, "replicas": len(f.replicas),
        "fleet": {"requests": f.requests, "finished": f.finished,
                  "tokens": {"prompt": f.prompt_tokens, "hit": f.hit_tokens,
                             "usable_hit": f.usable_hit_tokens},
                  "rates": {"token_hit": f.token_hit_rate, "usable_hit": f.usable_hit_rate},
                  "load_imbalance": f.load_imbalance, "latency": _latency(f.latency, sat),
                  "time": {"simulated_ms": round(f.duration_ms, 3), "wall_s": round(f.wall_s, 3)}},
        "overload": overload_json(f),
        "per_replica": [
            {"replica": i, "requests": s.num_requests, "finished": s.counters.finished,
             "unfinished": len(s.unfinished),
             "rates": {"token_hit": s.counters.token_hit_rate,
                       "usable_hit": s.counters.usable_hit_rate},
             "prefill_computed": s.counters.prefill_tokens, "decoded": s.counters.decode_tokens,
             "latency": _latency(s.latency, sat)}
            for i, s in enumerate(f.replicas)],
    }
    return envelope("simulate-fleet", body, ignored_flags=ignored_flags,
                    notes=[*notes, hit_rates.SIMULATE])
