"""`kvledger simulate --lossy-checkpoints int8|fp8`: the 8-bit checkpoint what-if.

Replays the workload twice on one memory: the plan as SGLang sizes it (full-precision
checkpoints), and the what-if where cached checkpoints are stored 8-bit, so the cache's
share of the state pool holds more of them (`cache.policies.lossy_states`). Lossy: labelled
"what-if (lossy, not bit-exact)" in the table and the JSON; it never changes `simulate`'s
default run, and `kvledger verify --lossy-checkpoints` measures what the error costs.
Only device checkpoints shrink: a host tier, if any, keeps full-size states, and the time
model reads and writes full-size states (the smaller loads and the (de)quantization are not
priced).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvledger.cli.app import console, emit_json

if TYPE_CHECKING:
    from kvledger.cache.policies.lossy_states import LossyCheckpoints
    from kvledger.cli.options.sim import SimInputs
    from kvledger.sglang.plan import SglangPlan
    from kvledger.sim.metrics import SimSummary


def _ttft_p95(summary: SimSummary) -> float | None:
    return None if summary.latency is None else summary.latency.ttft_ms.p95


def _run_json(s: SimSummary) -> dict:
    return {"usable_hit_rate": s.counters.usable_hit_rate,
            "token_hit_rate": s.counters.token_hit_rate, "evicted_slots": s.evicted_slots,
            "ttft_p95_ms": _ttft_p95(s)}


def run_lossy(plan: SglangPlan, work: SimInputs, *, kind: LossyCheckpoints, json: bool,
              progress: bool, ignored: list[str]) -> None:
    from rich.table import Table

    from kvledger.cache.policies.lossy_states import label, lossy_plan, lossy_states
    from kvledger.cli.runners.simulation import run_simulation
    from kvledger.core.envelope import envelope

    if plan.layout.state is None:
        raise ValueError(f"--lossy-checkpoints {kind.value}: {plan.model.source} has no "
                         "linear-attention states to quantize")
    lossy = lossy_states(plan)
    policies = f"{work.state_admission.value} + {work.state_eviction.value}"
    full = run_simulation(plan, work, progress=progress).summary
    what_if = run_simulation(lossy_plan(plan, lossy, kind), work, progress=progress).summary
    if json:
        body = {
            "label": label(kind), "lossy": True, "bit_exact": False,
            "checkpoints": kind.value, "state_policies": policies,
            "state_slots": lossy.state_slots, "pinned_slots": lossy.pinned_slots,
            "slot_bytes": lossy.slot_bytes, "checkpoint_slot_bytes": lossy.checkpoint_slot_bytes,
            "cache_full_slots": lossy.cache_full_slots,
            "cache_lossy_slots": lossy.cache_lossy_slots, "gained_slots": lossy.gained_slots,
            "runs": {"full-precision": _run_json(full), kind.value: _run_json(what_if)},
        }
        emit_json(envelope("simulate-lossy-checkpoints", body, ignored_flags=ignored,
                           notes=plan.notes))
        return
    console.print(f"[bold yellow]{label(kind)}[/] — never the default; state policies "
                  f"{policies}")
    console.print(f"K {lossy.state_slots} slots, {lossy.pinned_slots} pinned by running "
                  f"requests (full precision): the cache's {lossy.cache_full_slots} slots of "
                  f"{lossy.slot_bytes:,} B hold {lossy.cache_lossy_slots:,} checkpoints of "
                  f"{lossy.checkpoint_slot_bytes:,} B; {lossy.gained_slots:,} slots gained")
    table = Table("run", "cache slots at N", "token hit", "usable hit", "state evictions",
                  "TTFT p95 ms")
    for name, s, room in (("full precision (today)", full, lossy.cache_full_slots),
                          (f"{kind.value} checkpoints (what-if, lossy)", what_if,
                           lossy.cache_lossy_slots)):
        p95 = _ttft_p95(s)
        table.add_row(name, f"{room:,}", f"{s.counters.token_hit_rate:.3f}",
                      f"{s.counters.usable_hit_rate:.3f}", f"{s.evicted_slots:,}",
                      "—" if p95 is None else f"{p95:,.0f}")
    console.print(table)
    console.print("logit error of 8-bit states: kvledger verify --lossy-checkpoints "
                  f"{kind.value}")
    for flag in ignored:
        console.print(f"[yellow]ignored flag: {flag}[/]")
