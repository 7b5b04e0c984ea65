"""Simulator speed on the Mooncake synthetic trace and on 100,000 generated requests; prints JSON.

Targets (issue 7): the whole trace (3,993 requests, 61,194,628 prompt tokens) at page 64 in
under 10 s, and 100,000 generated requests in under 2 minutes, both replayed against the
real radix tree under GLM-5.3-Flash's default plan (scaled fp8, 100 GiB per rank).

In-run baseline: keying every request's pages (building its token ids and page keys, the
least a replay must touch per request). `replay_over_keying` says how many times that floor
the whole replay costs; the timed replay includes its own keying.

    python bench/simulate.py [--trace PATH] [--generated 100000] [--workload chat] [--quick]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from kvledger.plan import make_plan
from kvledger.sim.generators import GENERATORS, GeneratorParams
from kvledger.sim.pages import PageKeyer
from kvledger.sim.replay import simulate
from kvledger.sim.trace import read_trace
from kvledger.sim.workload import Workload

TRACE = Path(__file__).resolve().parents[2] / "shared" / "traces" / "synthetic_trace.jsonl"


def _keying_s(workload: Workload, page_tokens: int) -> float:
    keyer = PageKeyer(page_tokens)
    start = time.perf_counter()
    for request in workload.requests:
        keyer.keys(request)
    return time.perf_counter() - start


def _measure(name: str, workload: Workload, load_s: float, target_s: float) -> dict:
    plan = make_plan(kv_cache_dtype="fp8_e4m3")
    keying = _keying_s(workload, plan.layout.page_tokens)
    start = time.perf_counter()
    result = simulate(plan, workload)
    replay = time.perf_counter() - start
    s = result.summary
    return {
        "workload": name, "requests": len(workload.requests),
        "prompt_tokens": workload.prompt_tokens, "page_tokens": plan.layout.page_tokens,
        "load_s": round(load_s, 3), "keying_s": round(keying, 3), "replay_s": round(replay, 3),
        "replay_over_keying": round(replay / keying, 1), "target_s": target_s,
        "within_target": replay < target_s, "finished": s.counters.finished,
        "token_hit_rate": round(s.counters.token_hit_rate, 4),
        "usable_hit_rate": round(s.counters.usable_hit_rate, 4),
        "series_rows": len(result.series), "engine_steps": s.counters.steps,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, default=TRACE)
    parser.add_argument("--generated", type=int, default=100_000)
    parser.add_argument("--workload", default="chat", choices=sorted(GENERATORS))
    parser.add_argument("--quick", action="store_true", help="500 trace requests, 5,000 generated")
    args = parser.parse_args()
    out = []
    start = time.perf_counter()
    trace = read_trace(args.trace)
    load = time.perf_counter() - start
    if args.quick:
        trace = trace.head(500)
    out.append(_measure("mooncake synthetic trace", trace, load, 10.0))
    count = 5_000 if args.quick else args.generated
    start = time.perf_counter()
    generated = GENERATORS[args.workload].generate(GeneratorParams(num_requests=count))
    load = time.perf_counter() - start
    out.append(_measure(generated.name, generated, load, 120.0))
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
