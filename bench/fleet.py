"""Fleet replay time and the `--jobs 2` speedup on the shared synthetic trace; prints JSON.

Targets (issue 25): a fleet of 1–8 replicas (`simulate --replicas R`) replays the trace
(3,993 requests) in under 30 s each, command start to end; and `simulate --compare --jobs 2`
(eight state-policy replays, the FULL-only ceiling and the offline bound as independent runs
in two local processes) is at least 1.7× faster than the serial `--compare` on 2 cores.

Every number is a whole `python -m kvledger …` command (interpreter start, imports, reading
the trace, output) as a user runs it; `replay_s` is the fleet's own replay loop from its JSON.
In-run baseline for the speedup: the serial `--compare` on the same trace, alternated with
the `--jobs 2` run `--rounds` times so both see the same machine load; the ratio is of the
medians. The machine may be loaded by other work: `load_1m` is the 1-minute load average
before each run, and `cpus` the cores there are. `identical` checks that the two runs
printed the same JSON document byte for byte.

    python bench/fleet.py [--trace PATH] [--rounds 3] [--jobs 2] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

TRACE = Path(__file__).resolve().parents[1] / "tests" / "data" / "synthetic_trace.jsonl"
FLEET_TARGET_S = 30.0
SPEEDUP_TARGET = 1.7
REPLICAS = (1, 2, 4, 8)
ROUTERS = ("round-robin", "least-load", "prefix-aware", "kv-aware", "precise-prefix",
           "state-aware")


def _kvledger(*args: str) -> tuple[float, str, float]:
    """(wall seconds, stdout, load average before) of one CLI run."""
    load = os.getloadavg()[0]
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "kvledger", *args], capture_output=True,
                          text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"kvledger {' '.join(args)}: exit {done.returncode}\n{done.stderr}")
    return wall, done.stdout, load


def _fleet(trace: Path, replicas: int, router: str) -> dict:
    wall, out, load = _kvledger("simulate", "--trace", str(trace), "--replicas", str(replicas),
                                "--router", router, "--no-progress", "--json")
    doc = json.loads(out)
    fleet = doc["fleet"]
    return {"replicas": replicas, "router": router, "wall_s": round(wall, 2),
            "replay_s": fleet["time"]["wall_s"], "target_s": FLEET_TARGET_S,
            "within_target": wall < FLEET_TARGET_S, "load_1m": round(load, 2)}


def _speedup(trace: Path, rounds: int, jobs: int, num_requests: int | None) -> dict:
    args = ["simulate", "--trace", str(trace), "--compare", "--no-progress", "--json"]
    if num_requests is not None:
        args += ["--num-requests", str(num_requests)]
    serial, parallel, loads, identical = [], [], [], True
    for _ in range(rounds):  # alternate, so both see the same machine load
        wall_1, doc_1, load_1 = _kvledger(*args)
        wall_n, doc_n, load_n = _kvledger(*args, "--jobs", str(jobs))
        serial.append(round(wall_1, 2))
        parallel.append(round(wall_n, 2))
        loads += [round(load_1, 2), round(load_n, 2)]
        identical = identical and doc_1 == doc_n
    ratio = statistics.median(serial) / statistics.median(parallel)
    return {"command": "kvledger " + " ".join(args), "jobs": jobs, "rounds": rounds,
            "serial_s": serial, "parallel_s": parallel,
            "median_serial_s": statistics.median(serial),
            "median_parallel_s": statistics.median(parallel),
            "speedup": round(ratio, 2), "target": SPEEDUP_TARGET,
            "meets_target": ratio >= SPEEDUP_TARGET, "identical": identical, "load_1m": loads}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, default=TRACE)
    parser.add_argument("--rounds", type=int, default=3, help="serial/parallel pairs")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--quick", action="store_true",
                        help="8 replicas behind round-robin only; --compare on 1,000 requests, "
                             "one round")
    args = parser.parse_args()
    if args.rounds < 1 or args.jobs < 2:
        raise SystemExit("--rounds: at least 1; --jobs: at least 2")
    if args.quick:
        fleets = [_fleet(args.trace, 8, "round-robin")]
    else:
        fleets = [_fleet(args.trace, r, "round-robin") for r in REPLICAS]
        fleets += [_fleet(args.trace, 8, router) for router in ROUTERS[1:]]
    compare = _speedup(args.trace, 1 if args.quick else args.rounds, args.jobs,
                       1_000 if args.quick else None)
    print(json.dumps({"trace": str(args.trace), "cpus": os.cpu_count(), "fleets": fleets,
                      "slowest_fleet_s": max(f["wall_s"] for f in fleets),
                      "compare": compare}, indent=2))


if __name__ == "__main__":
    main()
