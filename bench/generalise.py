"""State policies on every workload: usable hit, fraction of the offline bound, and TTFT
p50/p95 with the saturation flag, with ratios to the engine default measured in the same run.

Setting: GLM-5.3-Flash on one rank, `--available-gib 60 --kv-cache-dtype fp8_e4m3` (205
state slots, 41 running requests), device only and with a host tier of ratio 2. Workloads:
the shared synthetic trace, the six generators (1,000 requests, seed 0, 1 session/s; their
parameters: `kvledger.sim.generators`) and any trace given with --trace.

* Hit columns replay each workload at its own arrival rate (the rate the policy table and
  issue targets use); `of bound` is usable hit / the offline bound on the same pools;
  `serving bound` is the row's own (`kvledger.bound.serving`: its replay's schedule, the
  slots its running requests held charged) and `of it` usable hit / that.
* Latency columns replay the same policy with arrivals stretched until the default keeps up
  on one rank (`--time-scale` raised to busy replicas × 1.25, at least doubling, until the
  default's replay is not saturated, at most 64×), so TTFT compares unsaturated runs; `sat`
  says whether a row's own run still saturated.
* With the host tier, `chosen split` rows replay the new policies on a host budget of the
  same bytes split by `kvledger.bound.split.choose_state_share` from the trace's reuse
  distances, never below SGLang's own share (the share printed), beside SGLang's split.

    python bench/generalise.py [--trace PATH ...] [--only NAME ...] [--device-only] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table

from kvledger.bound.split import choose_state_share, reuse_distances
from kvledger.bound.trace import BoundTrace
from kvledger.cache.policies import StateAdmission as A
from kvledger.cache.policies import StateEviction as E
from kvledger.report.policy_compare import DEFAULT_PAIR, bound_row, compare_policies, replay_pair
from kvledger.sglang.deploy import Deployment, KVDtype
from kvledger.sglang.plan import make_plan
from kvledger.sim.config import SimConfig
from kvledger.sim.fleet.summary import assess
from kvledger.sim.generators import GENERATORS
from kvledger.sim.replay import simulate
from kvledger.sim.setup import step_timer
from kvledger.sim.sources import load_workload

SHARED = Path(__file__).resolve().parents[2] / "shared" / "traces" / "synthetic_trace.jsonl"
LOCAL = Path(__file__).resolve().parents[1] / "tests" / "data" / "synthetic_trace.jsonl"

PAIRS = ((A.ENGINE, E.LRU),  # the engine default: ratios refer to it
         (A.GHOST_BRANCH, E.FLOP_AWARE),
         (A.SEGMENT_BRANCH, E.LRU),
         (A.SEGMENT_BRANCH, E.SPENT_FIRST),
         (A.GHOST_BRANCH, E.HIT_DENSITY),
         (A.QUEUE_BRANCH, E.QUEUE_AWARE))
SPLIT_PAIRS = ((A.GHOST_BRANCH, E.FLOP_AWARE), (A.SEGMENT_BRANCH, E.LRU),
               (A.SEGMENT_BRANCH, E.SPENT_FIRST), (A.QUEUE_BRANCH, E.QUEUE_AWARE))


MAX_TIME_SCALE = 64  # arrivals stretched at most this much for the latency columns


def _plan(host: bool, share: float | None = None):
    return make_plan("glm-5.3-flash", Deployment(
        kv_cache_dtype=KVDtype.FP8_E4M3, enable_hierarchical_cache=host,
        hicache_ratio=2.0 if host else None), available_gib=60, host_state_share=share)


def _workloads(traces: list[Path], only: set[str] | None):
    found = [("synthetic", lambda s: load_workload(trace=SHARED if SHARED.exists() else LOCAL,
                                                   time_scale=s))]
    found += [(name, lambda s, n=name: load_workload(generator=n, num_requests=1000, seed=0,
                                                     rate_per_s=1.0, time_scale=s))
              for name in GENERATORS]
    found += [(t.stem, lambda s, t=t: load_workload(trace=t, time_scale=s)) for t in traces]
    return [(n, f) for n, f in found if only is None or n in only]


def chosen_share(plan, workload) -> float:
    """`choose_state_share` for `plan`'s host budget (the release's view, SGLang's bytes)."""
    view = plan.host.views[0]
    cap = plan.capacity
    held = plan.layout.held_slots_per_request * cap.max_running_requests
    reuse = reuse_distances(BoundTrace.of(workload.requests, page_tokens=plan.layout.page_tokens))
    state_pool = view.pools.rows[-1].total_bytes
    return choose_state_share(reuse, budget_bytes=view.pools.total_bytes,
                              floor=state_pool / view.pools.total_bytes,
                              page_bytes=view.per_token.total_bytes * plan.layout.page_tokens,
                              slot_bytes=view.pools.rows[-1].unit_bytes,
                              device_pages=cap.max_total_tokens // plan.layout.page_tokens,
                              device_slots=max(cap.state_slots - held, 0))


def _latency(plan, workload, pair, time_scale: float) -> dict:
    config = SimConfig(state_admission=pair[0], state_eviction=pair[1])
    result = simulate(plan, workload, config)
    timer, _ = step_timer(plan, config)
    verdict = assess([result.summary], result.requests, timer,
                     chunk_tokens=config.chunked_prefill_tokens)
    lat = result.summary.latency
    return {"ttft_p50_ms": None if lat is None else lat.ttft_ms.p50,
            "ttft_p95_ms": None if lat is None else lat.ttft_ms.p95,
            "saturated": verdict.overload.saturated,
            "busy_replicas": verdict.overload.busy_replicas}


def run_one(name: str, load, host: bool) -> dict:
    start = time.perf_counter()
    plan, workload = _plan(host), load(1.0)
    comparison = compare_policies(plan, workload, SimConfig(), PAIRS)
    first = _latency(plan, workload, PAIRS[0], 1.0)
    scale, slow = 1, workload
    while first["saturated"] and scale < MAX_TIME_SCALE:
        busy = first["busy_replicas"] or 0.0
        scale = max(2 * scale, math.ceil(busy * 1.25 * scale))
        slow = load(float(scale))
        first = _latency(plan, slow, PAIRS[0], float(scale))
    rows = []
    for pair, row in zip(PAIRS, comparison.rows, strict=False):
        rows.append({"policy": row.label, "split": "SGLang" if host else None,
                     "usable_hit": row.usable_hit, "fraction_of_bound": row.fraction_of_bound,
                     "serving_bound": row.serving_bound.usable_hit if row.serving_bound else None,
                     "fraction_of_serving_bound": row.fraction_of_serving_bound,
                     **_latency(plan, slow, pair, scale)})
    ceiling = comparison.rows[-1]
    if host:
        share = chosen_share(plan, workload)
        split_plan = _plan(True, share)
        bound = bound_row(split_plan, workload,
                          replay_pair(split_plan, workload, SimConfig(), DEFAULT_PAIR))
        for pair in SPLIT_PAIRS:
            row = replay_pair(split_plan, workload, SimConfig(), pair)
            rows.append({"policy": row.label, "split": f"chosen {share:g}",
                         "usable_hit": row.usable_hit,
                         "fraction_of_bound": bound.fraction(row.usable_hit) if bound else None,
                         "serving_bound": row.serving_bound.usable_hit
                         if row.serving_bound else None,
                         "fraction_of_serving_bound": row.fraction_of_serving_bound,
                         **_latency(split_plan, slow, pair, scale)})
    base = rows[0]
    for row in rows:
        row["usable_over_default"] = (row["usable_hit"] / base["usable_hit"]
                                      if base["usable_hit"] else None)
        row["ttft_p95_over_default"] = (row["ttft_p95_ms"] / base["ttft_p95_ms"]
                                        if row["ttft_p95_ms"] and base["ttft_p95_ms"] else None)
    b = comparison.bound
    return {"workload": name, "tier": "host ratio 2" if host else "device only",
            "latency_time_scale": scale, "bound": None if b is None else b.usable_hit,
            "bound_exact": None if b is None else b.bound.exact,
            "full_only_ceiling": ceiling.usable_hit, "rows": rows,
            "wall_s": round(time.perf_counter() - start, 1)}


def table(result: dict) -> Table:
    bound = "—" if result["bound"] is None else f"{result['bound']:.3f}"
    t = Table(title=f"{result['workload']}, {result['tier']}: bound {bound}, FULL-only ceiling "
              f"{result['full_only_ceiling']:.3f}; latency at --time-scale "
              f"{result['latency_time_scale']} (×: over engine + lru)", title_justify="left",
              box=box.SIMPLE_HEAD, show_edge=False)
    for col in ("admission + eviction", "host split", "usable hit", "×", "of bound",
                "serving bound", "of it", "TTFT p50 s", "TTFT p95 s", "×", "sat"):
        t.add_column(col, justify="left" if col in ("admission + eviction", "host split")
                     else "right", no_wrap=True)
    for r in result["rows"]:
        def s(ms):
            return "—" if ms is None else f"{ms / 1e3:,.2f}"
        t.add_row(r["policy"], r["split"] or "—", f"{r['usable_hit']:.3f}",
                  "—" if r["usable_over_default"] is None else f"{r['usable_over_default']:.2f}",
                  "—" if r["fraction_of_bound"] is None else f"{r['fraction_of_bound']:.2f}",
                  "—" if r["serving_bound"] is None else f"{r['serving_bound']:.3f}",
                  "—" if r["fraction_of_serving_bound"] is None
                  else f"{r['fraction_of_serving_bound']:.2f}", s(r["ttft_p50_ms"]), s(r["ttft_p95_ms"]),
                  "—" if r["ttft_p95_over_default"] is None
                  else f"{r['ttft_p95_over_default']:.2f}", "yes" if r["saturated"] else "no")
    return t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, action="append", default=[],
                        help="Another Mooncake-format trace to add as a workload.")
    parser.add_argument("--only", action="append", default=None,
                        help="Run only these workloads (synthetic, a generator, a trace stem).")
    parser.add_argument("--device-only", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    tiers = (False,) if args.device_only else (False, True)
    only = None if args.only is None else set(args.only)
    results = [run_one(name, load, host) for name, load in _workloads(args.trace, only)
               for host in tiers]
    if args.json:
        print(json.dumps(results, indent=2))
        return
    console = Console(width=150)
    for r in results:
        console.print(table(r))


if __name__ == "__main__":
    main()
