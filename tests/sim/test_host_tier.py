"""The replay with the host tier on: evictions become host hits, each write policy's traffic,
conservation across both tiers, and the --json keys.

Scripted scenarios use GLM-5.3-Flash, scaled fp8, page 64, a device pool of T = 40 pages and
the default --hicache-ratio 2 (host: int(2·2,560) // 64 + 1 = 81 pages, int(2·343) + 1 = 687
state slots). Requests run one at a time (APART). A 1,000-token prompt with 8 output tokens
caches 960 tokens (15 pages) and its state at the last grid point of its prefill; a 2,000-token
one caches 1,984 tokens (31 pages) and needs ⌈2,007 / 64⌉ = 32 pages while it runs.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvledger.host.policy import BackupPolicy
from kvledger.report.sim_json import sim_json
from kvledger.sim.config import SimConfig
from kvledger.sim.generators import GENERATORS, GeneratorParams
from kvledger.sim.replay import simulate
from sim.sim_factories import from_prompts, prompts, request, small_plan, workload

APART_MS = 1e7
PAGE_BYTES = 64 * 7_260  # KV rows (11 × 528 B) and index keys (11 × 132 B) of 64 tokens
SLOT_BYTES = 147_619_840  # one state slot (the plan's state ledger)
A, B = {1: 1000}, {2: 2000}


def _plan(**deploy):
    return small_plan(max_total_tokens=40 * 64, **deploy)


def _run(requests, policy=BackupPolicy.WRITE_THROUGH, host=True, **deploy):
    w = workload(*(request(i, i * APART_MS, segments) for i, segments in enumerate(requests)))
    plan = _plan(enable_hierarchical_cache=True, **deploy) if host else _plan(**deploy)
    return simulate(plan, w, SimConfig(integrity_every_steps=1, hicache_write_policy=policy))


def _hits(result):
    return {r.rid: (r.hit_tokens, r.usable_hit_tokens) for r in result.requests}


def test_small_device_evictions_become_host_hits():
    # A, B, A, B. Device-only: B evicts A (32 pages needed, 25 free), the second A evicts B,
    # the second B evicts A: nothing is ever hit.
    requests = (A, B, A, B)
    off = _run(requests, host=False)
    assert _hits(off) == {0: (0, 0), 1: (0, 0), 2: (0, 0), 3: (0, 0)}
    assert off.summary.host is None
    # write_through: A (15 pages + state) and B (31 + state) are backed up when inserted.
    # B's run evicts A from device only (it stays on host); the second A loads its 15 pages
    # and state back (evicting B, which stays on host), the second B loads 31 back (evicting
    # A): 960 and 1,984 prompt tokens served from host, none recomputed.
    on = _run(requests)
    assert _hits(on) == {0: (0, 0), 1: (0, 0), 2: (960, 960), 3: (1984, 1984)}
    s, h = on.summary, on.summary.host
    assert (s.evicted_pages, s.evicted_slots) == (15 + 31 + 15, 3)
    assert (h.backup_pages, h.backup_slots, h.loadback_pages, h.loadback_slots) == (46, 2, 46, 2)
    assert h.backup_bytes == h.loadback_bytes == 46 * PAGE_BYTES + 2 * SLOT_BYTES == 316_613_120
    assert (h.host_evicted_pages, h.host_evicted_slots) == (0, 0)
    assert h.loadback_hit_tokens == 960 + 1984
    assert (h.peak_pages_used, h.peak_slots_used) == (46, 2)
    assert (h.capacity_pages, h.capacity_slots, h.page_bytes, h.slot_bytes) == (
        81, 687, PAGE_BYTES, SLOT_BYTES)
    assert s.counters.prefill_tokens == 1000 + 2000 + 40 + 16  # only the tails recomputed


def test_a_small_host_evicts_its_lru_and_loses_that_hit():
    # --hicache-ratio 1: int(2,560) // 64 + 1 = 41 host pages, 343 + 1 state slots. Backing B
    # up (31 pages, 26 free) evicts the host-only A (15 pages and its state) from host, so
    # the second A computes again; its backup in turn evicts the host-only B.
    on = _run((A, B, A), hicache_ratio=1.0)
    h = on.summary.host
    assert (h.capacity_pages, h.capacity_slots) == (41, 344)
    assert _hits(on) == {0: (0, 0), 1: (0, 0), 2: (0, 0)}
    assert (h.backup_pages, h.backup_slots) == (15 + 31 + 15, 3)
    assert (h.host_evicted_pages, h.host_evicted_slots) == (15 + 31, 2)
    assert (h.loadback_pages, h.loadback_slots, h.loadback_hit_tokens) == (0, 0, 0)
    assert (h.peak_pages_used, h.peak_slots_used) == (31, 1)


@pytest.mark.parametrize(("policy", "backed_up"), [
    (BackupPolicy.WRITE_THROUGH, (15, 1)),  # A on insert
    (BackupPolicy.WRITE_THROUGH_SELECTIVE, (15, 1)),  # A on its second hit (the reuse)
    (BackupPolicy.WRITE_BACK, (0, 0)),  # nothing was evicted, so nothing is backed up
])
def test_write_back_backs_up_only_at_eviction(policy, backed_up):
    h = _run((A, A), policy).summary.host
    assert (h.backup_pages, h.backup_slots) == backed_up


@pytest.mark.parametrize(("policy", "traffic", "host_hits"), [
    # A is backed up on insert, B on insert: both come back from host.
    (BackupPolicy.WRITE_THROUGH, (46, 2, 46, 2), (960, 1984)),
    # A is backed up on its second hit, B (one hit) never: B's eviction loses it.
    (BackupPolicy.WRITE_THROUGH_SELECTIVE, (15, 1, 15, 1), (960, 0)),
    # Backups at eviction only: A when B's run evicts it, B when A's loadback evicts it; A's
    # last eviction needs none (its host copy outlived the loadback).
    (BackupPolicy.WRITE_BACK, (46, 2, 46, 2), (960, 1984)),
])
def test_each_write_policy_backs_up_what_it_says(policy, traffic, host_hits):
    on = _run((A, A, B, A, B), policy)
    h = on.summary.host
    assert (h.backup_pages, h.backup_slots, h.loadback_pages, h.loadback_slots) == traffic
    assert (_hits(on)[3][1], _hits(on)[4][1]) == host_hits
    assert h.backup_bytes == traffic[0] * PAGE_BYTES + traffic[1] * SLOT_BYTES
    assert on.series.column("host_backup_pages_cum")[-1] == traffic[0]


def test_write_through_backs_up_at_least_what_selective_does_on_a_generated_load():
    w = GENERATORS["chat"].generate(GeneratorParams(num_requests=120, seed=3, rate_per_s=4))
    plan = small_plan(max_total_tokens=300 * 64, enable_hierarchical_cache=True)
    got = {p: simulate(plan, w, SimConfig(hicache_write_policy=p)).summary.host
           for p in BackupPolicy}
    through, selective = got[BackupPolicy.WRITE_THROUGH], got[BackupPolicy.WRITE_THROUGH_SELECTIVE]
    assert through.backup_bytes >= selective.backup_bytes > 0
    assert through.backup_pages > selective.backup_pages


def test_json_has_every_host_key():
    on = _run((A, B, A))
    doc = sim_json(on.summary)["host"]
    h = on.summary.host
    assert doc == {
        "available": True, "note": on.summary.host_note, "policy": "write_through",
        "capacity_pages": 81, "capacity_slots": 687, "page_bytes": PAGE_BYTES,
        "slot_bytes": SLOT_BYTES, "capacity_bytes": 81 * PAGE_BYTES + 687 * SLOT_BYTES,
        "backup_pages": 46, "backup_slots": 2, "backup_bytes": h.backup_bytes,
        "loadback_pages": 15, "loadback_slots": 1,
        "loadback_bytes": 15 * PAGE_BYTES + SLOT_BYTES, "host_evicted_pages": 0,
        "host_evicted_slots": 0, "loadback_hit_tokens": 960, "peak_pages_used": 46,
        "peak_slots_used": 2, "state_backup": "all", "declined_state_backups": 0,
        "state_share": None,
    }


@pytest.mark.parametrize("policy", list(BackupPolicy))
@pytest.mark.parametrize(("name", "deploy"), [
    ("chat", {"max_total_tokens": 300 * 64, "max_mamba_cache_size": 40}),
    ("agent", {"max_total_tokens": 900 * 64, "max_mamba_cache_size": 60}),
])
def test_conservation_with_the_host_tier_under_pressure(policy, name, deploy):
    w = GENERATORS[name].generate(GeneratorParams(num_requests=100, seed=5, rate_per_s=4))
    plan = small_plan(enable_hierarchical_cache=True, hicache_ratio=1.0, **deploy)
    result = simulate(plan, w, SimConfig(integrity_every_steps=1, hicache_write_policy=policy))
    s, h = result.summary, result.summary.host
    assert s.counters.finished + len(s.unfinished) == len(w.requests)
    series = result.series
    pages = sum(series.column(k) for k in (
        "pages_requests", "pages_cache_locked", "pages_cache_unlocked", "pages_free"))
    assert np.all(pages == s.token_pages)
    assert series.column("host_pages_used").max() <= h.capacity_pages
    assert series.column("host_slots_used").max() <= h.capacity_slots
    for column in ("host_backup_pages_cum", "host_loadback_pages_cum"):
        assert np.all(np.diff(series.column(column)) >= 0)
    assert series.column("host_backup_pages_cum")[-1] == h.backup_pages
    assert h.peak_pages_used <= h.capacity_pages and h.peak_slots_used <= h.capacity_slots
    assert h.backup_pages > 0 and h.loadback_hit_tokens <= s.counters.usable_hit_tokens


@settings(max_examples=40, deadline=None)
@given(
    # few segment ids and long segments: prompts share prefixes, small pools evict, and
    # about a quarter of the examples load KV back from host
    drawn=prompts(segment_ids=4, segment_tokens=(64, 900), max_segments=3, requests=(2, 14),
                  spread_ms=20_000),
    pages=st.integers(16, 48), slots=st.integers(5, 30), running=st.integers(1, 4),
    ratio=st.sampled_from([1.0, 1.5, 3.0]), policy=st.sampled_from(list(BackupPolicy)),
)
def test_any_workload_conserves_both_tiers(drawn, pages, slots, running, ratio, policy):
    """Integrity after every step: tree, device allocators and host pools agree (each index
    held once, host resident == used), and every request finishes or is reported."""
    w = from_prompts(drawn)
    plan = small_plan(max_total_tokens=pages * 64, max_mamba_cache_size=slots,
                      max_running_requests=running, enable_hierarchical_cache=True,
                      hicache_ratio=ratio)
    result = simulate(plan, w, SimConfig(chunked_prefill_tokens=256, integrity_every_steps=1,
                                         hicache_write_policy=policy))
    s = result.summary
    assert s.counters.finished + len(s.unfinished) == len(w.requests)
    for r in result.requests:
        assert r.usable_hit_tokens <= r.hit_tokens < r.prompt_tokens
    assert s.host.peak_pages_used <= s.host.capacity_pages
    assert s.host.loadback_hit_tokens <= s.counters.usable_hit_tokens
