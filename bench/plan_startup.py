"""Cold start of `kvledger plan --json`, median of several runs, against bare Python startup.

Prints JSON: the median wall time of each command and their ratio, measured in the same run.
Target: `kvledger plan --json` under 0.5 s on a 2-core machine.

    python bench/plan_startup.py [--runs 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time


def median_seconds(cmd: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    baseline = median_seconds([sys.executable, "-c", "pass"], runs)
    plan = median_seconds([sys.executable, "-m", "kvledger", "plan", "--json"], runs)
    explain = median_seconds([sys.executable, "-m", "kvledger", "explain"], runs)
    print(json.dumps({
        "runs": runs,
        "python_startup_s": round(baseline, 4),
        "plan_json_s": round(plan, 4),
        "explain_s": round(explain, 4),
        "plan_over_python_startup": round(plan / baseline, 2),
        "target_s": 0.5,
        "meets_target": plan < 0.5,
    }, indent=2))


if __name__ == "__main__":
    main()
