"""Small plans and hand-made workloads for simulator tests."""

from __future__ import annotations

from pathlib import Path

from hypothesis import strategies as st

from kvledger.sglang.deploy import Deployment, KVDtype
from kvledger.sglang.plan import SglangPlan, make_plan
from kvledger.sim.workload import Request, Workload

# The Mooncake FAST'25 synthetic trace shipped next to the repository (Apache-2.0).
TRACE = Path(__file__).resolve().parents[1] / "data" / "synthetic_trace.jsonl"


def small_plan(**deploy) -> SglangPlan:
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


def prompts(*, segment_ids: int, segment_tokens: tuple[int, int], max_segments: int,
            requests: tuple[int, int], spread_ms: float) -> st.SearchStrategy:
    """Draws of (segments, output tokens, arrival ms) per request, for `from_prompts`."""
    segment = st.tuples(st.integers(1, segment_ids), st.integers(*segment_tokens))
    return st.lists(st.tuples(st.lists(segment, min_size=1, max_size=max_segments),
                              st.integers(0, 300), st.floats(0, spread_ms)),
                    min_size=requests[0], max_size=requests[1])


def from_prompts(drawn: list) -> Workload:
    """A workload of `prompts` draws, request ids in arrival order."""
    arrivals = sorted(at for _, _, at in drawn)
    return workload(*(request(i, at, segs, output=out)
                      for i, ((segs, out, _), at) in enumerate(zip(drawn, arrivals, strict=True))))
