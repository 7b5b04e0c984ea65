"""Sequential replay speed: every oracle cell of the synthetic trace; prints a table and JSON.

Cells: the 15 of `oracle/sglang-0.5.23-tree/summary.json` (S1, S2, INF × radix@64,
mamba@64, mamba@64+branch, mamba@1, mamba@1+branch), replayed as `kvledger replay` does.
Targets (issue 10): all 15 cells in under 20 s, each page-64 cell under 1.5 s.

In-run baseline: computing the page keys of every prompt at the cell's page size (the least
a replay must touch per request), measured once per page size in the same run;
`over_keys` is how many times that floor a cell costs. `cpu_s` is the cell's process CPU time
(less sensitive than wall time to other processes sharing the cores). Each cell also says whether its hit
array equals SGLang's (`identical`: sha1 of the array, as in summary.json).

    python bench/replay.py [--oracle DIR] [--trace PATH] [--only S1 ...]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from kvledger.sequential.keys import PromptKeyer
from kvledger.sequential.oracle import oracle_cells
from kvledger.sequential.replay import replay
from kvledger.sequential.summary import summary
from kvledger.sim.trace import parse_trace_lines

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
ORACLE = DATA / "sglang-0.5.23-tree"
TRACE = DATA / "synthetic_trace.jsonl"


def _keys_s(requests: list, page_tokens: int) -> float:
    keyer = PromptKeyer(page_tokens)
    start = time.perf_counter()
    for request in requests:
        keyer.keys(request)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--oracle", type=Path, default=ORACLE)
    parser.add_argument("--trace", type=Path, default=TRACE)
    parser.add_argument("--only", nargs="*", default=(), help="scenarios or runs to keep")
    args = parser.parse_args()
    with args.trace.open(encoding="utf-8") as handle:
        requests = parse_trace_lines(handle, source=args.trace.name)
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
               "identical": doc["prefix_len_sha1"] == cell.expected["prefix_len_sha1"]}
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
                    "all_identical": all(r["identical"] for r in rows)},
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
