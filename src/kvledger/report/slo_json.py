"""The `kvledger recommend --trace FILE --ttft-p95-ms X --json` document.

Schema `kvledger.recommend-slo/1`, inside the common envelope (`core.envelope`):

    workload, requests, slo{ttft_p95_ms, tpot_p95_ms (null: none)}, objective ("gpus" or
    "cost"), prices_usd_per_gpu_hour ({} when ranking by GPUs),
    best (null: nothing searched meets the SLO): {fleet…, measured{…}, commands{replicas[]
          ("nodeN: python -m sglang.launch_server …"), router (null: none to run),
          router_note, simulate (the `kvledger simulate` that replays this fleet)}},
    also_meets[{fleet…, measured}]: the chosen fleet's level, the other fleets that meet it,
    rejected[{fleet…, replayed, measured (null: ruled out without a replay), why[]}],
    refused_layouts[{gpu, tp, host_tier, why}]: layouts SGLang would not start,
    searched{layouts, replayed, ruled_out, not_needed}

fleet… = gpu, tp, host_tier, replicas (all), prefill_replicas / decode_replicas (null:
aggregated; with --pd a split's), router, gpus, cost_usd_per_hour (null by GPUs).
measured = ttft_p95_ms, tpot_p95_ms, finished, saturated, busy_replicas (null: one burst),
token_hit, usable_hit.
"""

from __future__ import annotations

import math
import shlex
from typing import Any

from kvledger.core.envelope import envelope
from kvledger.sim.fleet.launch import replica_commands, router_command, worker_urls
from kvledger.sim.fleet.slo import Candidate, Outcome
from kvledger.sim.fleet.slo_search import SloSearch, Trial


def _round(value: float | None, digits: int = 3) -> float | None:
    return None if value is None or not math.isfinite(value) else round(value, digits)


def fleet_fields(c: Candidate, cost: float | None) -> dict[str, Any]:
    return {"gpu": c.layout.gpu, "tp": c.layout.tp, "host_tier": c.layout.host_tier,
            "replicas": c.replicas, "prefill_replicas": c.prefill_replicas,
            "decode_replicas": c.decode_replicas, "router": c.router.value, "gpus": c.gpus,
            "cost_usd_per_hour": cost}


def measured(o: Outcome | None) -> dict[str, Any] | None:
    if o is None:
        return None
    return {"ttft_p95_ms": _round(o.ttft_p95_ms), "tpot_p95_ms": _round(o.tpot_p95_ms),
            "finished": o.finished, "saturated": o.saturated,
            "busy_replicas": _round(o.busy_replicas, 4),
            "token_hit": round(o.token_hit_rate, 6), "usable_hit": round(o.usable_hit_rate, 6)}


def simulate_words(result: SloSearch, t: Trial, workload_words: tuple[str, ...]) -> list[str]:
    """`kvledger simulate …` replaying trial `t`'s fleet on the searched workload."""
    c = t.candidate
    launch = shlex.split(result.plans[c.layout].launch_command())
    flags = launch[launch.index("--model-path"):]
    fleet = (["--replicas", str(c.replicas)] if c.prefill_replicas is None else
             ["--prefill-replicas", str(c.prefill_replicas), "--decode-replicas",
              str(c.decode_replicas)])
    return ["kvledger", "simulate", *workload_words, "--gpu", c.layout.gpu, *fleet,
            "--router", c.router.value, *flags]


def _pd_commands(result: SloSearch, t: Trial) -> dict[str, Any]:
    """P prefill then D decode servers (`--disaggregation-mode`), packed as one fleet, and the
    SGLang router's PD mode in front."""
    c = t.candidate
    base = result.plans[c.layout].launch_command()
    lines = replica_commands(base, tp=c.layout.tp, replicas=c.replicas)
    roles = ["prefill"] * c.prefill_replicas + ["decode"] * c.decode_replicas
    urls = worker_urls(tp=c.layout.tp, replicas=c.replicas)
    node_lines = [line.replace(base, f"{base} --disaggregation-mode {role}")
                  for line, role in zip(lines, roles, strict=True)]
    words = ["python", "-m", "sglang_router.launch_router", "--pd-disaggregation"]
    for url, role in zip(urls, roles, strict=True):
        words += [f"--{role}", url]
    return {"replicas": node_lines, "router": shlex.join(words),
            "router_note": f"SGLang router's PD mode; prefill policy searched: "
                           f"{c.router.value}, decode: least-load"}


def commands(result: SloSearch, t: Trial, workload_words: tuple[str, ...]) -> dict[str, Any]:
    c = t.candidate
    if c.prefill_replicas is not None:
        return {**_pd_commands(result, t),
                "simulate": shlex.join(simulate_words(result, t, workload_words))}
    server = result.plans[c.layout].launch_command()
    router, note = router_command(c.router, tp=c.layout.tp, replicas=c.replicas)
    return {"replicas": list(replica_commands(server, tp=c.layout.tp, replicas=c.replicas)),
            "router": router, "router_note": note,
            "simulate": shlex.join(simulate_words(result, t, workload_words))}


def slo_json(result: SloSearch, *, workload_words: tuple[str, ...],
             prices: dict[str, float] | None, ignored_flags: tuple[str, ...] = (),
             notes: tuple[str, ...] = ()) -> dict[str, Any]:
    best = result.best
    level = [] if best is None else [
        t for t in result.trials if t.meets and t is not best
        and t.candidate.gpus == best.candidate.gpus
        and t.cost_usd_per_hour == best.cost_usd_per_hour]
    body = {
        "workload": result.workload, "requests": result.requests,
        "slo": {"ttft_p95_ms": result.slo.ttft_p95_ms, "tpot_p95_ms": result.slo.tpot_p95_ms},
        "objective": result.objective.value, "prices_usd_per_gpu_hour": dict(prices or {}),
        "best": None if best is None else {
            **fleet_fields(best.candidate, best.cost_usd_per_hour),
            "measured": measured(best.outcome),
            "commands": commands(result, best, workload_words)},
        "also_meets": [{**fleet_fields(t.candidate, t.cost_usd_per_hour),
                        "measured": measured(t.outcome)} for t in level],
        "rejected": [{**fleet_fields(t.candidate, t.cost_usd_per_hour),
                      "replayed": t.outcome is not None, "measured": measured(t.outcome),
                      "why": list(t.failures)} for t in result.trials if not t.meets],
        "refused_layouts": [{"gpu": layout.gpu, "tp": layout.tp, "host_tier": layout.host_tier,
                             "why": why} for layout, why in result.refused],
        "searched": {"layouts": len(result.plans) + len(result.refused),
                     "replayed": result.replayed,
                     "ruled_out": sum(t.outcome is None for t in result.trials),
                     "not_needed": result.not_needed},
    }
    return envelope("recommend-slo", body, ignored_flags=ignored_flags, notes=notes)
