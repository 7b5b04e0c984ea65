"""vLLM sequential replay speed: kvledger against vLLM 0.33's own KVCacheManager, same run.

Cells: the 16 of `oracle/vllm-0.33-prefix-cache/summary.json` (S1, S2, INF × full@16,
full@64, hybrid-align@64 and @640, and the +dense, +nockpt, +sync variants), replayed as
`kvledger replay --engine vllm` does. Each cell says whether our per-request hit array
equals the oracle's (`oracle`: sha1 as in summary.json, only on the oracle's own trace).

When the vLLM 0.33.0 oracle environment is present (`$KVLEDGER_ORACLE_HOME/vllm-0.33.0`,
built by `oracle/vllm/setup_env.sh`; never built here), vLLM's own `KVCacheManager` (the
Unitary or Hybrid coordinator over one BlockPool) replays the same cells in a subprocess of
that environment (`oracle/vllm/prefix_replay.py`, the request sequence of the oracle README
§3), alternating with ours `--repeats` times per cell; figures are medians. Ours is the whole
`vllm_replay()`: keying, hashing and the cache. Theirs is split in two: `cache` (the manager
calls and the scheduler's split) and `hash` (building each `Request`, which hashes its
blocks with sha256); token lists are built outside both clocks. `x` is how many times faster
ours is than their cache + hash, `x cache` than their cache alone (the strictest reading),
both in process CPU time (less sensitive than wall time to other processes on the cores).
`same`: our hit array equals theirs from the same run. Target (issue 23): >= 3x, identical.

    python bench/vllm_replay.py [--oracle DIR] [--trace PATH] [--only S1 full@64 ...]
                                [--repeats 3]
"""

from __future__ import annotations

import argparse
import filecmp
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from kvledger.sequential.summary import digest
from kvledger.sequential.vllm_oracle import vllm_oracle_cells
from kvledger.sequential.vllm_replay import vllm_replay
from kvledger.sim.trace import parse_trace_lines

sys.path.insert(0, str(Path(__file__).resolve().parent))
from engine_driver import EngineDriver, find_env, medians, ratio  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
ORACLE = DATA / "vllm-0.33-prefix-cache"
TRACE = DATA / "synthetic_trace.jsonl"
VLLM_ENV = "vllm-0.33.0"
THEIRS = ("wall_s", "cpu_s", "hash_wall_s", "hash_cpu_s")


def _ours(requests: list, spec) -> tuple[np.ndarray, dict]:
    start, cpu = time.perf_counter(), time.process_time()
    out = vllm_replay(requests, spec)
    return out.hits, {"wall_s": time.perf_counter() - start, "cpu_s": time.process_time() - cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--oracle", type=Path, default=ORACLE)
    parser.add_argument("--trace", type=Path, default=TRACE)
    parser.add_argument("--only", nargs="*", default=(), help="scenarios or runs to keep")
    parser.add_argument("--repeats", type=int, default=3, help="runs per side and cell")
    args = parser.parse_args()
    with args.trace.open(encoding="utf-8") as handle:
        requests = parse_trace_lines(handle, source=args.trace.name)
    oracle_trace = filecmp.cmp(args.trace, TRACE, shallow=False)
    cells = [c for c in vllm_oracle_cells(args.oracle)
             if not args.only or c.scenario in args.only or c.run in args.only]
    python = find_env(VLLM_ENV, probe="import importlib.metadata as m; "
                      "assert m.version('vllm') == '0.33.0'; import vllm.v1.core.kv_cache_manager")
    if python is None:
        print(f"no {VLLM_ENV} environment (oracle/vllm/setup_env.sh builds it): "
              "timing kvledger alone")
    print(f"{'cell':26} {'ours wall':>9} {'ours cpu':>8} {'vllm wall':>9} {'cache cpu':>9} "
          f"{'hash cpu':>8} {'x':>5} {'x cache':>7}  oracle same")
    rows = []
    with tempfile.TemporaryDirectory() as out:
        driver = EngineDriver(python, "oracle/vllm/prefix_replay.py", args.trace, Path(out)) \
            if python else None
        try:
            for cell in cells:
                ours, theirs, hits = [], [], None
                for _ in range(max(1, args.repeats)):
                    hits, timing = _ours(requests, cell.spec)
                    ours.append(timing)
                    if driver is not None:
                        theirs.append(driver.replay(cell.expected))
                o = medians(ours, ("wall_s", "cpu_s"))
                row = {"cell": cell.name, "ours": o,
                       "oracle": digest(hits) == cell.expected["prefix_len_sha1"]
                       if oracle_trace else None}
                line = f"{cell.name:26} {o['wall_s']:9.2f} {o['cpu_s']:8.2f}"
                if theirs:
                    t = medians(theirs, THEIRS)
                    total_cpu = t["cpu_s"] + t["hash_cpu_s"]
                    row.update(
                        vllm=t, same=all(np.array_equal(hits, r["hits"]) for r in theirs),
                        ours_over_theirs_cpu=round(o["cpu_s"] / total_cpu, 3),
                        x_faster_cpu=ratio(o["cpu_s"], total_cpu),
                        x_faster_wall=ratio(o["wall_s"], t["wall_s"] + t["hash_wall_s"]),
                        x_faster_than_cache_cpu=ratio(o["cpu_s"], t["cpu_s"]))
                    line += (f" {t['wall_s'] + t['hash_wall_s']:9.2f} {t['cpu_s']:9.2f} "
                             f"{t['hash_cpu_s']:8.2f} {row['x_faster_cpu']:5.1f} "
                             f"{row['x_faster_than_cache_cpu']:7.1f}")
                print(f"{line}  {row['oracle']} {row.get('same', '-')}", flush=True)
                rows.append(row)
        finally:
            if driver is not None:
                driver.close()
    compared = [r for r in rows if "vllm" in r]
    result = {"requests": len(requests), "repeats": args.repeats, "cells": rows,
              "total_cpu_s": round(sum(r["ours"]["cpu_s"] for r in rows), 2)}
    if compared:
        result["vllm_total_cpu_s"] = round(sum(r["vllm"]["cpu_s"] + r["vllm"]["hash_cpu_s"]
                                               for r in compared), 2)
        result["targets"] = {
            "at_least_3x_cpu": all(r["x_faster_cpu"] >= 3 for r in compared),
            "at_least_3x_cache_only_cpu": all(r["x_faster_than_cache_cpu"] >= 3
                                              for r in compared),
            "all_identical": all(r["same"] for r in compared)}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
