"""`kvledger simulate --slot-economy shared-track[=P]`: the shared track-slot what-if.

Replays the workload twice on one memory: the plan as SGLang sizes it, and the what-if with
the track slots freed at full concurrency given to the cache (`cache.policies.slot_economy`).
Labelled a what-if everywhere; it never changes `simulate`'s default run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvledger.cli.app import console, emit_json

if TYPE_CHECKING:
    from kvledger.cli.options.sim import SimInputs
    from kvledger.sglang.plan import SglangPlan
    from kvledger.sim.metrics import SimSummary


def _ttft_p95(summary: SimSummary) -> float | None:
    return None if summary.latency is None else summary.latency.ttft_ms.p95


def run_slot_economy(plan: SglangPlan, work: SimInputs, *, spec: str, json: bool, progress: bool,
                     ignored: list[str]) -> None:
    from rich.table import Table

    from kvledger.cache.policies.slot_economy import (
        LABEL,
        parse_slot_economy,
        shared_track_plan,
        slot_economy,
    )
    from kvledger.cli.runners.simulation import run_simulation
    from kvledger.core.envelope import envelope

    if plan.layout.state is None:
        raise ValueError(f"--slot-economy {spec}: {plan.model.source} has no state slots")
    economy = slot_economy(plan, parse_slot_economy(spec))
    today = run_simulation(plan, work, progress=progress).summary
    shared = run_simulation(shared_track_plan(plan, economy), work, progress=progress).summary
    rows = {"engine": today, "shared-track": shared}
    if json:
        body = {
            "label": LABEL, "pool_slots": economy.pool_slots,
            "state_policies": f"{work.state_admission.value} + {work.state_eviction.value}",
            "state_slots": economy.state_slots, "running_requests": economy.running_requests,
            "pinned_today_slots": economy.pinned_today_slots,
            "pinned_shared_slots": economy.pinned_shared_slots,
            "freed_slots": economy.freed_slots,
            "runs": {name: {"usable_hit_rate": s.counters.usable_hit_rate,
                            "token_hit_rate": s.counters.token_hit_rate,
                            "evicted_slots": s.evicted_slots, "ttft_p95_ms": _ttft_p95(s)}
                     for name, s in rows.items()},
        }
        emit_json(envelope("simulate-slot-economy", body, ignored_flags=ignored,
                           notes=plan.notes))
        return
    console.print(f"[bold]{LABEL}[/] — lossless, never the default")
    console.print(f"K {economy.state_slots} slots, N {economy.running_requests}: pinned at N "
                  f"running {economy.pinned_today_slots} today → {economy.pinned_shared_slots} "
                  f"(N working + {economy.pool_slots} pool); {economy.freed_slots:,} slots freed")
    table = Table("run", "cache slots at N", "token hit", "usable hit", "state evictions",
                  "TTFT p95 ms")
    for name, s, room in (("engine", today, economy.cacheable_today_slots),
                          ("shared-track (what-if)", shared, economy.cacheable_shared_slots)):
        p95 = _ttft_p95(s)
        table.add_row(name, f"{room:,}", f"{s.counters.token_hit_rate:.3f}",
                      f"{s.counters.usable_hit_rate:.3f}", f"{s.evicted_slots:,}",
                      "—" if p95 is None else f"{p95:,.0f}")
    console.print(table)
    for flag in ignored:
        console.print(f"[yellow]ignored flag: {flag}[/]")
