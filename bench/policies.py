"""State policies on the shared synthetic trace: usable hit and TTFT p95 per policy, with
ratios to the engine default (engine admission + LRU) measured in the same run.

Setting (issue 14): GLM-5.3-Flash on one rank, `--available-gib 60 --kv-cache-dtype
fp8_e4m3` (4,670,784 tokens, 205 state slots, 41 running requests), the whole Mooncake
synthetic trace replayed realistically (arrivals, concurrency, chunked prefill of 8,192
tokens, outputs; the roofline time model on an H200), device only and with a host tier of
ratio 2. Targets: usable hit ≥ 0.20 (≥ 2× the default) on device, ≥ 0.45 with the host tier,
TTFT p95 below the default's in both, with a lossless policy. The FULL-only ceiling (no
states, the same bytes) bounds every row.

    python bench/policies.py [--trace PATH] [--device-only] [--json]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from rich.console import Console

from kvledger.deploy import Deployment, KVDtype
from kvledger.plan import make_plan
from kvledger.report.policy_compare import COMPARE_PAIRS, compare_policies, compare_table
from kvledger.sim.config import SimConfig
from kvledger.sim.sources import load_workload

SHARED = Path(__file__).resolve().parents[2] / "shared" / "traces" / "synthetic_trace.jsonl"
LOCAL = Path(__file__).resolve().parents[1] / "tests" / "data" / "synthetic_trace.jsonl"


def run(trace: Path, host: bool) -> dict:
    plan = make_plan("glm-5.3-flash", Deployment(
        kv_cache_dtype=KVDtype.FP8_E4M3, enable_hierarchical_cache=host,
        hicache_ratio=2.0 if host else None), available_gib=60)
    workload = load_workload(trace=trace, generator=None, num_requests=None, seed=0,
                             rate_per_s=None, time_scale=1.0)
    start = time.perf_counter()
    comparison = compare_policies(plan, workload, SimConfig(), COMPARE_PAIRS)
    wall = time.perf_counter() - start
    base = comparison.baseline
    rows = []
    for row in comparison.rows:
        rows.append({
            "policy": row.label, "usable_hit": round(row.usable_hit, 4),
            "usable_over_default": round(row.usable_hit / base.usable_hit, 3),
            "ttft_p95_s": None if row.ttft_p95_ms is None else round(row.ttft_p95_ms / 1e3, 1),
            "ttft_p95_over_default": None if row.ttft_p95_ms is None
            else round(row.ttft_p95_ms / base.ttft_p95_ms, 3),
            "token_hit": round(row.token_hit, 4), "state_evictions": row.state_evictions,
        })
    return {"tier": "device + host (ratio 2)" if host else "device only",
            "state_slots": plan.capacity.state_slots,
            "max_running_requests": plan.capacity.max_running_requests,
            "wall_s": round(wall, 1), "rows": rows, "table": compare_table(comparison)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, default=SHARED if SHARED.exists() else LOCAL)
    parser.add_argument("--device-only", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    console = Console(width=100)
    results = [run(args.trace, host) for host in ((False,) if args.device_only
                                                  else (False, True))]
    if args.json:
        print(json.dumps([{k: v for k, v in r.items() if k != "table"} for r in results],
                         indent=2))
        return
    for r in results:
        console.print(f"[bold]{r['tier']}[/]: {r['state_slots']} state slots, "
                      f"{r['max_running_requests']} running requests; {r['wall_s']} s")
        console.print(r["table"])


if __name__ == "__main__":
    main()
