"""`simulate --json`: every number is the summary's, host metrics are null when unavailable."""

from __future__ import annotations

from kvledger.report.sim_json import SCHEMA, sim_json
from kvledger.sim.replay import simulate
from sim.sim_factories import request, small_plan, workload


def test_json_mirrors_the_summary():
    w = workload(request(0, 0, {1: 1000}), request(1, 1e7, {1: 1000}))
    s = simulate(small_plan(), w).summary
    doc = sim_json(s)
    assert doc["schema"] == SCHEMA
    assert doc["tokens"] == {"prompt": 2000, "hit": 960, "usable_hit": 960,
                             "recomputed_shallow_state": 0, "prefill_computed": 1040,
                             "decoded": 16}
    assert doc["rates"] == {"token_hit": 0.48, "usable_hit": 0.48}
    host_numbers = ("backup_bytes", "loadback_bytes", "host_evicted_pages",
                    "loadback_hit_tokens", "policy", "capacity_pages", "capacity_slots",
                    "capacity_bytes", "page_bytes", "slot_bytes", "backup_pages", "backup_slots",
                    "loadback_pages", "loadback_slots", "host_evicted_slots", "peak_pages_used",
                    "peak_slots_used", "state_backup", "declined_state_backups", "state_share")
    assert doc["host"] == {"available": False, "note": s.host_note,
                           **dict.fromkeys(host_numbers)}
    assert "not available" in s.host_note
    assert doc["binding"] is None
    # machine codes, not the tables' words (schema kvledger.simulate/2)
    assert set(doc["blocked_ms"]) == {"token_pages", "state_slots", "running_requests",
                                      "prefill_budget"}
