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

`--against SRC` also replays the same workloads with another checkout's package (SRC is
its `src` directory, e.g. a `git worktree` of an older commit), alternating with this one
`--rounds` times, and prints each workload's best replay time under both and the ratio
(`now_over_then`; within 1.1 is the bar for a refactor that must not slow the replay).

    python bench/simulate.py [--trace PATH] [--generated 100000] [--workload chat] [--quick]
                             [--against OLD/src --rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from kvledger.sglang.deploy import Deployment, KVDtype
from kvledger.sglang.plan import SglangPlan, make_plan
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


def _plan(host: bool) -> SglangPlan:
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
    parser.add_argument("--against", type=Path, help="another checkout's src directory")
    parser.add_argument("--rounds", type=int, default=2, help="alternating runs with --against")
    args = parser.parse_args()
    if args.against is not None:
        print(json.dumps(_compare(args), indent=2))
        return
    print(json.dumps(_run(args), indent=2))


def _one_run(args: argparse.Namespace, src: Path | None) -> list[dict]:
    """This script, without --against, in a fresh interpreter (with `src` first on the path)."""
    cmd = [sys.executable, __file__, "--trace", str(args.trace), "--generated",
           str(args.generated), "--workload", args.workload, *(["--quick"] if args.quick else [])]
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = f"{src.resolve()}{os.pathsep}{env.get('PYTHONPATH', '')}"
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def _compare(args: argparse.Namespace) -> list[dict]:
    if not (args.against / "kvledger" / "__init__.py").is_file():
        raise SystemExit(f"--against {args.against}: no kvledger package there")
    if args.rounds < 1:
        raise SystemExit(f"--rounds {args.rounds}: expected at least 1")
    then: list[list[dict]] = []
    now: list[list[dict]] = []
    for _ in range(args.rounds):  # alternate, so both see the same machine load
        then.append(_one_run(args, args.against))
        now.append(_one_run(args, None))
    rows = []
    for i, first in enumerate(now[0]):
        best_then = min(run[i]["replay_s"] for run in then)
        best_now = min(run[i]["replay_s"] for run in now)
        rows.append({"workload": first["workload"], "then_replay_s": best_then,
                     "now_replay_s": best_now, "now_over_then": round(best_now / best_then, 3),
                     "then_token_hit_rate": then[0][i]["token_hit_rate"],
                     "now_token_hit_rate": first["token_hit_rate"],
                     "then_usable_hit_rate": then[0][i]["usable_hit_rate"],
                     "now_usable_hit_rate": first["usable_hit_rate"]})
    return rows


def _run(args: argparse.Namespace) -> list[dict]:
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
    return out


if __name__ == "__main__":
    main()
