"""The store tier (L3) in a replay: a prefix evicted from device is restored from the store."""

from __future__ import annotations

import pytest

from kvledger.sim.config import SimConfig, StepCost
from kvledger.sim.l3 import L3Config
from kvledger.sim.replay import simulate
from kvledger.store.backend import BackendKind
from sim.sim_factories import request, small_plan, workload

APART_MS = 1e7
PAGE_B = 64 * 7260  # the token ledger's 7,260 B per token (fp8), one 64-token page
STATE_B = 147_619_840  # the state ledger's slot
# hand-set step costs: 0.02 ms per prefill token, so restored tokens save exactly that
COST = StepCost(overhead_ms=12.0, prefill_ms_per_token=0.02, decode_ms_per_token=0.06)


def _run(l3: L3Config | None):
    # T = 40 pages: request 0 caches 960 tokens (15 pages); requests 1 and 2 (16 pages each)
    # push it out of the device tree; request 3 asks for request 0's text again.
    w = workload(request(0, 0, {1: 1000}), request(1, APART_MS, {10: 1000}),
                 request(2, 2 * APART_MS, {11: 1000}), request(3, 3 * APART_MS, {1: 1000}))
    return simulate(small_plan(max_total_tokens=40 * 64), w,
                    SimConfig(integrity_every_steps=1, l3=l3, step_cost=COST))


def test_an_evicted_prefix_is_restored_from_the_store_instead_of_recomputed():
    without = _run(None).summary
    with_l3 = _run(L3Config(capacity_bytes=10 << 30, backend=BackendKind.MOONCAKE)).summary
    assert without.store is None and without.evicted_pages >= 15
    s = with_l3.store
    assert s.restores == 1 and s.restored_tokens == 960  # 15 pages, ≤ prompt − 1
    assert with_l3.counters.prefill_tokens == without.counters.prefill_tokens - 960
    manifest_b = 26 + 16 * 16 + 8  # a 15-page group's manifest (kvledger.store.group)
    assert s.get_bytes == 15 * PAGE_B + STATE_B + manifest_b
    # Mooncake defaults: 0.2 ms per round trip, two round trips, 1.5 GB/s
    assert s.get_ms == pytest.approx(2 * 0.2 + s.get_bytes / 1.5e6, abs=1e-3)
    # three distinct prefixes written through, one group each; nothing evicted from the store
    assert s.put_groups == 3 and s.groups == 3 and s.evicted_groups == 0
    assert s.objects == 3 * 15 + 3 * 2
    assert s.used_bytes == 3 * (15 * PAGE_B + STATE_B + manifest_b)
    # the last request's 960 tokens at 0.02 ms each become the read its admitting step waits
    assert with_l3.duration_ms == pytest.approx(without.duration_ms - 960 * 0.02 + s.get_ms,
                                                abs=1e-2)


def test_a_store_smaller_than_its_groups_restores_nothing():
    s = _run(L3Config(capacity_bytes=STATE_B, backend=BackendKind.REDIS)).summary.store
    assert s.restores == 0 and s.put_groups == 0 and s.refused_groups >= 3
    assert s.used_bytes == 0


def test_a_dense_model_has_no_state_for_the_store():
    from kvledger.sglang.plan import make_plan

    with pytest.raises(ValueError, match="--l3-size"):
        simulate(make_plan("llama-3.1-8b"), workload(request(0, 0, {1: 100})),
                 SimConfig(l3=L3Config(capacity_bytes=1 << 30)))
