"""Small plans and hand-made workloads for simulator tests."""

from __future__ import annotations

from pathlib import Path

from kvledger.deploy import Deployment, KVDtype
from kvledger.plan import Plan, make_plan
from kvledger.sim.workload import Request, Workload

# The Mooncake FAST'25 synthetic trace shipped next to the repository (Apache-2.0).
TRACE = Path(__file__).resolve().parents[1] / "data" / "synthetic_trace.jsonl"


def small_plan(**deploy) -> Plan:
    """GLM-5.3-Flash, scaled fp8, page 64, with pools cut down by SGLang's own flags."""
    deploy.setdefault("kv_cache_dtype", KVDtype.FP8_E4M3)
    return make_plan(deployment=Deployment(**deploy))


def request(rid: int, at_ms: float, segments: dict[int, int] | list[tuple[int, int]],
            output: int = 8, output_segment: int | None = None) -> Request:
    pairs = list(segments.items()) if isinstance(segments, dict) else list(segments)
    return Request(rid=rid, arrival_ms=at_ms, segment_ids=tuple(s for s, _ in pairs),
                   segment_tokens=tuple(n for _, n in pairs), output_tokens=output,
                   output_segment_id=output_segment)


def workload(*requests: Request, name: str = "hand-made") -> Workload:
    return Workload(name=name, requests=tuple(requests))
