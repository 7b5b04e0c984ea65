"""State policies on the shared synthetic trace: usable hit and TTFT p95 per policy, with
ratios to the engine default (engine admission + LRU) measured in the same run.

Setting (issue 14): GLM-5.3-Flash on one rank, `--available-gib 60 --kv-cache-dtype
fp8_e4m3` (4,670,784 tokens, 205 state slots, 41 running requests), the whole Mooncake
synthetic trace replayed realistically (arrivals, concurrency, chunked prefill of 8,192
tokens, outputs; the roofline time model on an H200), device only and with a host tier of
ratio 2. Targets: usable hit ≥ 0.20 (≥ 2× the default) on device, ≥ 0.45 with the host tier,
TTFT p95 below the default's in both, with a lossless policy. The FULL-only ceiling (no
states, the same bytes) bounds every row.

With the host tier a second table crosses the host-side choices with the default pair and
the best pair: the state backup rule (`--host-state-backup`: SGLang's `all`, kvledger's
`junctions`) and the split of the same host budget (`--hicache-state-share`, kvledger's
what-if; SGLang's ratio 2 gives states 47 % of it here). Every row's host pools hold the same
bytes as ratio 2's, up to SGLang's rounding of one page and one slot; ratios are to the
engine default (engine + lru, all, SGLang's split) measured in the same run.

    python bench/policies.py [--trace PATH] [--device-only] [--json]

After the lossless table, `what_if_rows` prints labelled what-ifs (never the default, not
what SGLang does today) on top of the best lossless policy: the shared track-slot pool
(lossless, needs an engine change) and 8-bit checkpoints (lossy, not bit-exact), with their
own default baseline measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table

from kvledger.cache.policies import StateAdmission, StateEviction
from kvledger.host.state_backup import HostStateBackup
from kvledger.report.policy_compare import COMPARE_PAIRS, compare_policies
from kvledger.report.policy_compare_view import compare_table
from kvledger.sglang.deploy import Deployment, KVDtype
from kvledger.sglang.plan import make_plan
from kvledger.sim.config import SimConfig
from kvledger.sim.replay import simulate
from kvledger.sim.sources import load_workload

SHARED = Path(__file__).resolve().parents[2] / "shared" / "traces" / "synthetic_trace.jsonl"
LOCAL = Path(__file__).resolve().parents[1] / "tests" / "data" / "synthetic_trace.jsonl"


HOST_PAIRS = ((StateAdmission.ENGINE, StateEviction.LRU),
              (StateAdmission.GHOST_BRANCH, StateEviction.FLOP_AWARE),
              (StateAdmission.SEGMENT_BRANCH, StateEviction.SPENT_FIRST))
HOST_CHOICES = ((HostStateBackup.ALL, None), (HostStateBackup.JUNCTIONS, None),
                (HostStateBackup.ALL, 0.6), (HostStateBackup.ALL, 0.7),
                (HostStateBackup.JUNCTIONS, 0.6), (HostStateBackup.JUNCTIONS, 0.7))


def _plan(host: bool, share: float | None = None):
    return make_plan("glm-5.3-flash", Deployment(
        kv_cache_dtype=KVDtype.FP8_E4M3, enable_hierarchical_cache=host,
        hicache_ratio=2.0 if host else None), available_gib=60, host_state_share=share)


def _workload(trace: Path):
    return load_workload(trace=trace, generator=None, num_requests=None, seed=0,
                         rate_per_s=None, time_scale=1.0)


def run_host_policies(trace: Path) -> dict:
    """The host-side choices (state backup rule × budget split) for the default and best pair."""
    workload = _workload(trace)
    start = time.perf_counter()
    rows = []
    for admission, eviction in HOST_PAIRS:
        for backup, share in HOST_CHOICES:
            config = SimConfig(state_admission=admission, state_eviction=eviction,
                               host_state_backup=backup)
            s = simulate(_plan(True, share), workload, config).summary
            rows.append({"policy": s.policies, "host_state_backup": backup.value,
                         "state_share": share, "host_state_slots": s.host.capacity_slots,
                         "host_pages": s.host.capacity_pages,
                         "host_bytes": s.host.capacity_bytes,
                         "usable_hit": round(s.counters.usable_hit_rate, 6),
                         "ttft_p95_s": round(s.latency.ttft_ms.p95 / 1e3, 1),
                         "declined_state_backups": s.host.declined_state_backups})
    base = rows[0]
    for row in rows:
        row["usable_over_default"] = round(row["usable_hit"] / base["usable_hit"], 3)
        row["ttft_p95_over_default"] = round(row["ttft_p95_s"] / base["ttft_p95_s"], 3)
    return {"tier": "host tier policies (ratio 2 budget)",
            "wall_s": round(time.perf_counter() - start, 1), "rows": rows}


def host_table(result: dict) -> Table:
    table = Table(title="Host-side policies at the ratio-2 host budget (×: over engine + lru, "
                  "all, SGLang's split)", title_justify="left", box=box.SIMPLE_HEAD,
                  show_edge=False)
    for name in ("admission + eviction", "state backup", "state share", "host slots / pages",
                 "host GB", "usable hit", "×", "TTFT p95 s", "×", "declined"):
        table.add_column(name, justify="left" if name == "admission + eviction" else "right")
    for r in result["rows"]:
        share = "SGLang" if r["state_share"] is None else f"{r['state_share']:g}"
        table.add_row(r["policy"], r["host_state_backup"], share,
                      f"{r['host_state_slots']:,} / {r['host_pages']:,}",
                      f"{r['host_bytes'] / 1e9:.2f}", f"{r['usable_hit']:.3f}",
                      f"{r['usable_over_default']:.2f}", f"{r['ttft_p95_s']:,.1f}",
                      f"{r['ttft_p95_over_default']:.2f}", f"{r['declined_state_backups']:,}")
    table.caption = ("state backup: all = SGLang's (every device state without a host copy); "
                     "junctions = kvledger's (a pass-through state only into a free host slot). "
                     "state share: --hicache-state-share (kvledger what-if), SGLang = ratio 2 "
                     "per pool. declined: state copies the rule declined (a node again on each later hit).")
    return table


def run(trace: Path, host: bool) -> dict:
    plan = _plan(host)
    workload = _workload(trace)
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


# --- what-ifs on top of the best lossless policy (labelled, never the default) ------------
BEST = (StateAdmission.GHOST_BRANCH, StateEviction.FLOP_AWARE)


def what_if_rows(trace: Path, host: bool) -> dict:
    """Default, best lossless, and the best with each what-if's plan; ratios to the default."""
    from kvledger.cache.policies.lossy_states import LossyCheckpoints, lossy_plan, lossy_states
    from kvledger.cache.policies.slot_economy import shared_track_plan, slot_economy
    from kvledger.sim.replay import simulate

    plan = make_plan("glm-5.3-flash", Deployment(
        kv_cache_dtype=KVDtype.FP8_E4M3, enable_hierarchical_cache=host,
        hicache_ratio=2.0 if host else None), available_gib=60)
    workload = load_workload(trace=trace, generator=None, num_requests=None, seed=0,
                             rate_per_s=None, time_scale=1.0)
    best = SimConfig(state_admission=BEST[0], state_eviction=BEST[1])
    kind = LossyCheckpoints.INT8
    runs = (("engine + lru (default)", plan, SimConfig()),
            ("ghost-branch + flop-aware", plan, best),
            ("  + shared track pool (what-if)",
             shared_track_plan(plan, slot_economy(plan)), best),
            ("  + int8 checkpoints (lossy what-if)",
             lossy_plan(plan, lossy_states(plan), kind), best))
    rows = []
    for name, run_plan, config in runs:
        s = simulate(run_plan, workload, config).summary
        p95 = None if s.latency is None else s.latency.ttft_ms.p95
        rows.append({"policy": name, "state_slots": run_plan.capacity.state_slots,
                     "usable_hit": round(s.counters.usable_hit_rate, 6),
                     "ttft_p95_s": None if p95 is None else round(p95 / 1e3, 1),
                     "state_evictions": s.evicted_slots})
    base = rows[0]
    for row in rows:
        row["usable_over_default"] = round(row["usable_hit"] / base["usable_hit"], 3)
        row["ttft_p95_over_default"] = (None if row["ttft_p95_s"] is None
                                        else round(row["ttft_p95_s"] / base["ttft_p95_s"], 3))
    return {"tier": "device + host (ratio 2)" if host else "device only", "what_ifs": rows}


def what_if_table(result: dict) -> Table:
    table = Table(title=f"What-ifs on the best lossless policy, {result['tier']} (×: over the "
                  "default, same run)", title_justify="left",
                  caption="shared track pool of 8: what-if, not SGLang today (lossless); int8 "
                  "checkpoints: what-if (lossy, not bit-exact). Never the default.")
    for name in ("run", "state slots", "usable hit", "×", "states evicted", "TTFT p95 s", "×"):
        table.add_column(name, justify="left" if name == "run" else "right",
                         no_wrap=name == "run")
    for r in result["what_ifs"]:
        table.add_row(r["policy"], f"{r['state_slots']:,}", f"{r['usable_hit']:.3f}",
                      f"{r['usable_over_default']:.2f}", f"{r['state_evictions']:,}",
                      f"{r['ttft_p95_s']:,.1f}", f"{r['ttft_p95_over_default']:.2f}")
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, default=SHARED if SHARED.exists() else LOCAL)
    parser.add_argument("--device-only", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--no-what-ifs", action="store_true",
                        help="Only the lossless policies (skip the labelled what-ifs).")
    args = parser.parse_args()
    console = Console(width=150)
    tiers = (False,) if args.device_only else (False, True)
    results = [run(args.trace, host) for host in tiers]
    host = None if args.device_only else run_host_policies(args.trace)
    what_ifs = [] if args.no_what_ifs else [what_if_rows(args.trace, host) for host in tiers]
    if args.json:
        print(json.dumps([{k: v for k, v in r.items() if k != "table"} for r in results]
                         + ([host] if host else []) + what_ifs, indent=2))
        return
    for r in results:
        console.print(f"[bold]{r['tier']}[/]: {r['state_slots']} state slots, "
                      f"{r['max_running_requests']} running requests; {r['wall_s']} s")
        console.print(r["table"])
    if host is not None:
        console.print(f"[bold]{host['tier']}[/]: {host['wall_s']} s")
        console.print(host_table(host))
    for w in what_ifs:
        console.print(what_if_table(w))


if __name__ == "__main__":
    main()
