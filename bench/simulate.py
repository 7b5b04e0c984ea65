"""Simulator speed on the Mooncake synthetic trace and on 100,000 generated requests; prints JSON.

Targets (issue 7): the whole trace (3,993 requests, 61,194,628 prompt tokens) at page 64 in
under 10 s, and 100,000 generated requests in under 2 minutes, both replayed against the
real radix tree under GLM-5.3-Flash's default plan (scaled fp8, 100 GiB per rank). The trace
again with the host tier on (--enable-hierarchical-cache --hicache-ratio 2, write_through,
replayed through HiCacheController in accounting mode): within 3× of the device-only replay
(`host_over_device`; the host tier's one-off setup, torch's import included, is `setup_s`).

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

from kvledger.deploy import Deployment, KVDtype
from kvledger.plan import Plan, make_plan
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


def _plan(host: bool) -> Plan:
    return make_plan(deployment=Deployment(kv_cache_dtype=KVDtype.FP8_E4M3,
                                           enable_hierarchical_cache=host,
                                           hicache_ratio=2.0 if host else None))


def _measure(name: str, workload: Workload, load_s: float, target_s: float,
             host: bool = False) -> dict:
    plan = _plan(host)
    keying = _keying_s(workload, plan.layout.page_tokens)
    start = time.perf_counter()
    result = simulate(plan, workload)
    total = time.perf_counter() - start
    s = result.summary
    replay = s.wall_s  # the replay loop itself; total - replay is setup (pools, host tier)
    extra = {}
    if s.host is not None:
        extra = {"setup_s": round(total - replay, 3), "host_policy": s.host.policy.value,
                 "backup_bytes": s.host.backup_bytes, "loadback_bytes": s.host.loadback_bytes,
                 "host_hit_tokens": s.host.loadback_hit_tokens,
                 "host_evicted_pages": s.host.host_evicted_pages}
    return {
        "workload": name, "requests": len(workload.requests),
        "prompt_tokens": workload.prompt_tokens, "page_tokens": plan.layout.page_tokens,
        "load_s": round(load_s, 3), "keying_s": round(keying, 3), "replay_s": round(replay, 3),
        "replay_over_keying": round(replay / keying, 1), "target_s": target_s,
        "within_target": replay < target_s, "finished": s.counters.finished,
        "token_hit_rate": round(s.counters.token_hit_rate, 4),
        "usable_hit_rate": round(s.counters.usable_hit_rate, 4),
        "series_rows": len(result.series), "engine_steps": s.counters.steps, **extra,
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
    device_only = _measure("mooncake synthetic trace", trace, load, 10.0)
    host_on = _measure("mooncake synthetic trace, host tier", trace, load,
                       round(3 * device_only["replay_s"], 3), host=True)
    host_on["host_over_device"] = round(host_on["replay_s"] / device_only["replay_s"], 2)
    out += [device_only, host_on]
    count = 5_000 if args.quick else args.generated
    start = time.perf_counter()
    generated = GENERATORS[args.workload].generate(GeneratorParams(num_requests=count))
    load = time.perf_counter() - start
    out.append(_measure(generated.name, generated, load, 120.0))
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
