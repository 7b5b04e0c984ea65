"""The `kvledger simulate --json` document.

Schema `kvledger.simulate/2`, inside the common envelope (`core.envelope`: schema,
kvledger_version, ignored_flags, notes — the plan's assumptions, then the replay's):

    workload, csv (the --csv path or null), requests{offered, finished, unfinished[{rid, reason}]},
    pools{page_tokens, token_pages, state_slots, max_running_requests, token_bytes, slot_bytes},
    tokens{prompt, hit, usable_hit, recomputed_shallow_state, prefill_computed, decoded},
    rates{token_hit, usable_hit},
    checkpoints{saved, already_cached, skipped_no_slot, declined_by_policy, policies},
    evictions{full_kv_pages, full_kv_tokens, full_kv_bytes, mamba_states, mamba_bytes},
    host{available, note, backup_bytes, loadback_bytes, host_evicted_pages,
         loadback_hit_tokens, policy, capacity_pages, capacity_slots, capacity_bytes,
         page_bytes, slot_bytes, backup_pages, backup_slots, loadback_pages, loadback_slots,
         host_evicted_slots, peak_pages_used, peak_slots_used, state_backup,
         declined_state_backups, state_share} (null when not available; state_backup is
         --host-state-backup, declined_state_backups the state copies it declined,
         state_share --hicache-state-share or null;
         pages are the plan's pages; loadback_hit_tokens are the prompt tokens that became
         usable hits through a loadback: KV pages loaded back, or KV already on device made
         usable by a state loaded back, so it can be non-zero with loadback_pages 0),
    store{backend, capacity_bytes, used_bytes, objects, groups, put_groups, put_bytes, put_ms,
          refused_groups, evicted_groups, restores, restored_tokens, get_bytes, get_ms, reads,
          no_room, lost_groups, broken_groups, timeouts} (null without --l3-size; accounting
          mode: bytes as the backend lays objects out, times from the backend's bandwidth and
          latency; restored_tokens are device hits, so they are part of tokens.usable_hit),
    blocked_ms{code: ms}, binding (a code or null), peaks{pages_used, pages_pinned,
    slots_used, slots_pinned, running}, time{simulated_ms, steps, queue_ms_mean, wall_s},
    latency{model, ttft_ms{mean, p50, p95, p99}, tpot_ms{…}, output_tokens_per_s,
    total_tokens_per_s} (ttft_ms and tpot_ms null when nothing finished),
    overload{…} (the rank's offered load against what it serves, and `saturated`; the block
    of `kvledger.simulate-fleet/1`, `kvledger.report.fleet_json`), latency.saturated (the same
    flag: a saturated run's latency grows with the trace's length)

Codes (`binding`, `blocked_ms` keys): token_pages, state_slots, running_requests,
prefill_budget. Major 2: these were prose in version 1, and `notes`/`ignored_flags` moved into
the envelope.
"""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import Any

from kvledger.cache.host_stats import HostStats
from kvledger.core.envelope import envelope, schema_name
from kvledger.report import hit_rates
from kvledger.sim.metrics import SimSummary
from kvledger.sim.series import Constraint

SCHEMA = schema_name("simulate")
CONSTRAINT_CODES = {Constraint.TOKENS: "token_pages", Constraint.STATE: "state_slots",
                    Constraint.RUNNING: "running_requests",
                    Constraint.PREFILL_BUDGET: "prefill_budget"}


def constraint_code(constraint: Constraint) -> str:
    code = CONSTRAINT_CODES.get(constraint)
    assert code is not None, f"{constraint} has no JSON code"
    return code


def sim_json(s: SimSummary, *, ignored_flags: tuple[str, ...] = (),
             notes: tuple[str, ...] = (), csv: str | None = None) -> dict[str, Any]:
    """The `kvledger simulate --json` document; `notes` are the plan's (the replay's follow)."""
    return envelope("simulate", sim_body(s, csv=csv), ignored_flags=ignored_flags,
                    notes=[*notes, *s.notes, hit_rates.SIMULATE])


def sim_body(s: SimSummary, *, csv: str | None = None) -> dict[str, Any]:
    c = s.counters
    host = s.host
    return {
        "workload": s.workload,
        "csv": csv,
        "requests": {"offered": s.num_requests, "finished": c.finished,
                     "unfinished": [{"rid": u.rid, "reason": u.reason} for u in s.unfinished]},
        "pools": {"page_tokens": s.page_tokens, "token_pages": s.token_pages,
                  "state_slots": s.state_slots, "max_running_requests": s.max_running_requests,
                  "token_bytes": s.token_bytes, "slot_bytes": s.slot_bytes},
        "tokens": {"prompt": c.prompt_tokens, "hit": c.hit_tokens,
                   "usable_hit": c.usable_hit_tokens,
                   "recomputed_shallow_state": c.recomputed_tokens,
                   "prefill_computed": c.prefill_tokens, "decoded": c.decode_tokens},
        "rates": {"token_hit": c.token_hit_rate, "usable_hit": c.usable_hit_rate},
        "checkpoints": {"saved": c.checkpoints_saved, "already_cached": c.checkpoints_existing,
                        "skipped_no_slot": c.checkpoints_skipped,
                        "declined_by_policy": c.checkpoints_declined, "policies": s.policies},
        "evictions": {"full_kv_pages": s.evicted_pages, "full_kv_tokens": s.evicted_tokens,
                      "full_kv_bytes": s.evicted_tokens * s.token_bytes,
                      "mamba_states": s.evicted_slots,
                      "mamba_bytes": s.evicted_slots * s.slot_bytes},
        "host": {"available": host is not None, "note": s.host_note,
                 **{f.name: getattr(host, f.name) if host else None for f in fields(HostStats)},
                 "policy": host.policy.value if host else None,
                 "state_backup": host.state_backup.value if host else None,
                 "capacity_bytes": host.capacity_bytes if host else None},
        "store": None if s.store is None else {
            f.name: (v.value if f.name == "backend" else v)
            for f in fields(s.store) for v in [getattr(s.store, f.name)]},
        "blocked_ms": {constraint_code(k): round(v, 3) for k, v in c.blocked_ms.items()},
        "binding": constraint_code(s.binding) if s.binding else None,
        "peaks": {"pages_used": c.peak_pages_used, "pages_pinned": c.peak_pages_pinned,
                  "slots_used": c.peak_slots_used, "slots_pinned": c.peak_slots_pinned,
                  "running": c.peak_running},
        "time": {"simulated_ms": round(s.duration_ms, 3), "steps": c.steps,
                 "queue_ms_mean": round(c.queue_ms / c.admitted, 3) if c.admitted else 0.0,
                 "wall_s": round(s.wall_s, 3)},
        "latency": _latency(s),
    }


def _latency(s: SimSummary) -> dict[str, Any]:
    lat = s.latency
    doc: dict[str, Any] = {"model": s.timing}
    if lat is None:
        return {**doc, "ttft_ms": None, "tpot_ms": None, "output_tokens_per_s": 0.0,
                "total_tokens_per_s": 0.0}
    return {**doc, "ttft_ms": asdict(lat.ttft_ms), "tpot_ms": asdict(lat.tpot_ms),
            "output_tokens_per_s": lat.output_tokens_per_s,
            "total_tokens_per_s": lat.total_tokens_per_s}
