"""Sequential replay speed: every oracle cell of the synthetic trace; prints a table and JSON.

Cells: the 15 of `oracle/sglang-0.5.23-tree/summary.json` (S1, S2, INF × radix@64,
mamba@64, mamba@64+branch, mamba@1, mamba@1+branch), replayed as `kvledger replay` does.
Targets (issue 10): all 15 cells in under 20 s, each page-64 cell under 1.5 s.

In-run baseline: computing the page keys of every prompt at the cell's page size (the least
a replay must touch per request), measured once per page size in the same run;
`over_keys` is how many times that floor a cell costs. `cpu_s` is the cell's process CPU time
(less sensitive than wall time to other processes sharing the cores). Each cell also says whether its hit
array equals SGLang's (`identical`: sha1 of the array, as in summary.json).

`--against-sglang` times SGLang 0.5.23's own tree on the FULL-only cells in the same run:
the oracle's radix@64 cells and radix@1 on the same pools (page 1: a key per token, the
heaviest walk). SGLang's `UnifiedRadixCache` with the Rust TreeCore runs in a subprocess of
its oracle environment (`oracle/sglang/tree_replay.py`; see `bench/engine_driver.py`), the
two sides alternating `--repeats` times per cell; each side's figure is the median. Ours is
the whole `replay()`, keying included; theirs leaves token expansion out, and `core` counts
only the time inside the Rust binding's calls (no Python cache, no torch allocator): the
strictest reading. `identical`: our per-request hit array equals theirs from the same run.
Target (issue 23): page-1 FULL-only at least 2× SGLang's Rust core.

    python bench/replay.py [--oracle DIR] [--trace PATH] [--only S1 ...]
                           [--against-sglang [--repeats 3]]
"""

from __future__ import annotations

import argparse
import filecmp
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from kvledger.sequential.keys import PromptKeyer
from kvledger.sequential.oracle import oracle_cells
from kvledger.sequential.replay import replay
from kvledger.sequential.summary import summary
from kvledger.sim.trace import parse_trace_lines

sys.path.insert(0, str(Path(__file__).resolve().parent))
from engine_driver import EngineDriver, find_env, medians, ratio  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
ORACLE = DATA / "sglang-0.5.23-tree"
TRACE = DATA / "synthetic_trace.jsonl"


def _keys_s(requests: list, page_tokens: int) -> float:
    keyer = PromptKeyer(page_tokens)
    start = time.perf_counter()
    for request in requests:
        keyer.keys(request)
    return time.perf_counter() - start


SGLANG_ENV = "sglang-0.5.23"
TIMINGS = ("wall_s", "cpu_s")
THEIR_TIMINGS = ("wall_s", "cpu_s", "core_wall_s", "core_cpu_s")


def _timed(requests: list, spec) -> tuple[np.ndarray, dict]:
    start, cpu = time.perf_counter(), time.process_time()
    out = replay(requests, spec)
    return out.hits, {"wall_s": time.perf_counter() - start, "cpu_s": time.process_time() - cpu}


def against_sglang(requests: list, cells: list, trace: Path, repeats: int) -> dict:
    """FULL-only cells, ours and SGLang's alternating; medians and ratios per cell."""
    python = find_env(SGLANG_ENV, probe="import importlib.metadata as m; "
                      "assert m.version('sglang') == '0.5.23'")
    if python is None:
        print(f"--against-sglang: no {SGLANG_ENV} environment (oracle/sglang/setup_env.sh "
              "builds it); skipped")
        return {"skipped": f"no {SGLANG_ENV} environment"}
    radix = [c for c in cells if not c.spec.has_state]
    specs = [(c.name, c.spec) for c in radix]
    specs += [(f"{c.scenario} radix@1", replace(c.spec, page_tokens=1)) for c in radix]
    rows = []
    print(f"\nvs SGLang 0.5.23 (UnifiedRadixCache, Rust TreeCore), medians of {repeats}")
    print(f"{'cell':18} {'ours wall':>9} {'ours cpu':>8} {'sg wall':>8} {'sg cpu':>7} "
          f"{'core wall':>9} {'core cpu':>8} {'x cpu':>6} {'x core':>6}  identical")
    with tempfile.TemporaryDirectory() as out:
        driver = EngineDriver(python, "oracle/sglang/tree_replay.py", trace, Path(out))
        try:
            for name, spec in specs:
                ours, theirs, hits = [], [], None
                cell = {"cell": name.replace(" ", ".").replace("@", "_p"),
                        "page_tokens": spec.page_tokens, "pool_tokens": spec.pool_tokens}
                for _ in range(repeats):
                    hits, timing = _timed(requests, spec)
                    ours.append(timing)
                    theirs.append(driver.replay(cell))
                o, t = medians(ours, TIMINGS), medians(theirs, THEIR_TIMINGS)
                same = all(np.array_equal(hits, r["hits"]) for r in theirs)
                row = {"cell": name, "ours": o, "sglang": t, "identical": same,
                       "ours_over_theirs_cpu": round(o["cpu_s"] / t["cpu_s"], 3),
                       "ours_over_core_cpu": round(o["cpu_s"] / t["core_cpu_s"], 3),
                       "x_faster_cpu": ratio(o["cpu_s"], t["cpu_s"]),
                       "x_faster_wall": ratio(o["wall_s"], t["wall_s"]),
                       "x_faster_than_core_cpu": ratio(o["cpu_s"], t["core_cpu_s"]),
                       "x_faster_than_core_wall": ratio(o["wall_s"], t["core_wall_s"])}
                rows.append(row)
                print(f"{name:18} {o['wall_s']:9.2f} {o['cpu_s']:8.2f} {t['wall_s']:8.2f} "
                      f"{t['cpu_s']:7.2f} {t['core_wall_s']:9.2f} {t['core_cpu_s']:8.2f} "
                      f"{row['x_faster_cpu']:6.1f} {row['x_faster_than_core_cpu']:6.1f}  "
                      f"{same}", flush=True)
        finally:
            driver.close()
    page1 = [r for r in rows if r["cell"].endswith("radix@1")]
    return {"repeats": repeats, "cells": rows,
            "targets": {"page1_at_least_2x_rust_core_cpu":
                        all(r["x_faster_than_core_cpu"] >= 2 for r in page1),
                        "all_identical": all(r["identical"] for r in rows)}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--oracle", type=Path, default=ORACLE)
    parser.add_argument("--trace", type=Path, default=TRACE)
    parser.add_argument("--only", nargs="*", default=(), help="scenarios or runs to keep")
    parser.add_argument("--against-sglang", action="store_true",
                        help="also time SGLang 0.5.23's own tree on the FULL-only cells")
    parser.add_argument("--repeats", type=int, default=3, help="runs per side and cell")
    args = parser.parse_args()
    with args.trace.open(encoding="utf-8") as handle:
        requests = parse_trace_lines(handle, source=args.trace.name)
    # The oracle's arrays are for its own trace; another trace is compared with SGLang only.
    oracle_trace = filecmp.cmp(args.trace, TRACE, shallow=False)
    cells = [c for c in oracle_cells(args.oracle)
             if not args.only or c.scenario in args.only or c.run in args.only]
    keys_s = {page: _keys_s(requests, page) for page in sorted({c.spec.page_tokens for c in cells})}
    rows = []
    print(f"{'cell':28} {'wall s':>7} {'cpu s':>7} {'keys s':>7} {'over keys':>9} {'hit rate':>9}  identical")
    for cell in cells:
        start, cpu = time.perf_counter(), time.process_time()
        out = replay(requests, cell.spec)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        doc = summary(out)
        page = cell.spec.page_tokens
        row = {"cell": cell.name, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "keys_s": round(keys_s[page], 3),
               "over_keys": round(wall / keys_s[page], 1), "token_hit_rate": doc["token_hit_rate"],
               "identical": doc["prefix_len_sha1"] == cell.expected["prefix_len_sha1"]
               if oracle_trace else None}
        rows.append(row)
        print(f"{row['cell']:28} {wall:7.2f} {cpu:7.2f} {keys_s[page]:7.3f} {row['over_keys']:9.1f} "
              f"{row['token_hit_rate']:9.6f}  {row['identical']}", flush=True)
    total = sum(r["wall_s"] for r in rows)
    total_cpu = sum(r["cpu_s"] for r in rows)
    page64 = max((r["wall_s"] for r, c in zip(rows, cells, strict=True)
                  if c.spec.page_tokens == 64), default=0.0)
    result = {
        "requests": len(requests),
        "cells": rows,
        "total_s": round(total, 2),
        "total_cpu_s": round(total_cpu, 2),
        "slowest_page64_cell_s": page64,
        "targets": {"total_under_20_s": total < 20, "page64_cells_under_1_5_s": page64 < 1.5,
                    # null on another trace: the oracle's arrays are for its own
                    "all_identical": all(r["identical"] for r in rows) if oracle_trace
                    else None},
    }
    if args.against_sglang:
        result["against_sglang"] = against_sglang(requests, cells, args.trace, args.repeats)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
