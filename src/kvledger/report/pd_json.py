"""The `kvledger simulate --prefill-replicas P --decode-replicas D --json` document.

Schema `kvledger.simulate-pd/1`, inside the common envelope (`core.envelope`):

    workload, router (the prefill fleet's and the aggregated fleet's; decode: least-load),
    link{kind, bytes_per_s, latency_ms, source},
    transfer{bytes (every rank, every request), per_request_ms{mean, p50, p95, p99}},
    disaggregated / aggregated: {replicas (words), gpus, requests, finished,
        rates{token_hit, usable_hit}, saturated, latency{ttft_ms{mean, p50, p95, p99},
        tpot_ms{…}, output_tokens_per_s, total_tokens_per_s} (null: nothing finished)},
    verdict[{metric ("TTFT p95 ms", …), disaggregated, aggregated, change (PD − agg) / agg,
             pd ("pays", "costs" or "even")}]
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from kvledger.core.envelope import envelope
from kvledger.sim.fleet.links import Link
from kvledger.sim.fleet.pd_compare import PdComparison, Side


def _side(s: Side) -> dict[str, Any]:
    lat = s.latency
    return {"replicas": s.replicas, "gpus": s.gpus, "requests": s.requests,
            "finished": s.finished,
            "rates": {"token_hit": round(s.token_hit_rate, 6),
                      "usable_hit": round(s.usable_hit_rate, 6)},
            "saturated": s.saturated,
            "latency": None if lat is None else {
                "ttft_ms": asdict(lat.ttft_ms), "tpot_ms": asdict(lat.tpot_ms),
                "output_tokens_per_s": lat.output_tokens_per_s,
                "total_tokens_per_s": lat.total_tokens_per_s}}


def pd_json(c: PdComparison, *, workload: str, router: str, link: Link,
            ignored_flags: tuple[str, ...] = (), notes: tuple[str, ...] = ()) -> dict[str, Any]:
    mean, p50, p95, p99 = c.transfer_ms
    body = {
        "workload": workload, "router": router,
        "link": {"kind": link.kind.value, "bytes_per_s": link.bytes_per_s,
                 "latency_ms": link.latency_ms, "source": link.source},
        "transfer": {"bytes": c.transfer_bytes,
                     "per_request_ms": {"mean": mean, "p50": p50, "p95": p95, "p99": p99}},
        "disaggregated": _side(c.pd), "aggregated": _side(c.aggregated),
        "verdict": [{"metric": m, "disaggregated": pv, "aggregated": av,
                     "change": round((pv - av) / av, 6) if av else None, "pd": word}
                    for m, pv, av, word in c.rows()],
    }
    return envelope("simulate-pd", body, ignored_flags=ignored_flags, notes=notes)
