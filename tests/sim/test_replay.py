"""The replay against the real tree: exact hits on a hand-made workload, each ledger blocking,
and conservation (every request accounted for, no pool over capacity) on generated loads."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvledger.sim.config import SimConfig
from kvledger.sim.generators import GENERATORS, GeneratorParams
from kvledger.sim.replay import simulate
from kvledger.sim.series import Constraint
from sim.sim_factories import from_prompts, prompts, request, small_plan, workload

APART_MS = 1e7  # far enough apart that each request runs alone


def test_hits_usable_hits_and_branch_checkpoints_exactly():
    # Page 64, checkpoint grid lcm(64, 64) = 64, decode checkpoints every 256 tokens.
    w = workload(
        request(0, 0 * APART_MS, {1: 1000}),  # cold; its finish caches 960 = ⌊1000/64⌋·64
        request(1, 1 * APART_MS, {1: 1000}),  # hit 960 (15 pages), all usable
        request(2, 2 * APART_MS, [(1, 1000), (2, 500)]),  # hit 960; caches up to 1472
        # 700 tokens of the same text: KV for 640 is cached, but no state sits at 640 (the
        # node is split there) → nothing usable; the tree asks for a checkpoint at 640
        request(3, 3 * APART_MS, {1: 700}),
        request(4, 4 * APART_MS, {1: 700}),  # now 640 is usable
    )
    result = simulate(small_plan(), w, SimConfig(integrity_every_steps=1))
    got = {r.rid: (r.hit_tokens, r.usable_hit_tokens) for r in result.requests}
    assert got == {0: (0, 0), 1: (960, 960), 2: (960, 960), 3: (640, 0), 4: (640, 640)}
    c = result.summary.counters
    assert (c.prompt_tokens, c.hit_tokens, c.usable_hit_tokens) == (4900, 3200, 2560)
    assert c.recomputed_tokens == 640
    assert c.prefill_tokens == 4900 - 2560
    assert c.decode_tokens == 5 * 8
    assert c.checkpoints_saved == 3  # requests 0, 2 and 3 leave a state; 1 and 4 add none
    assert result.summary.unfinished == ()


def test_running_limit_blocks_and_queues():
    w = workload(request(0, 0, {1: 640}, output=100), request(1, 0, {2: 640}, output=100))
    result = simulate(small_plan(max_running_requests=1), w)
    c = result.summary.counters
    assert result.summary.max_running_requests == 1
    assert c.blocked_ms[Constraint.RUNNING] > 0
    assert c.blocked_ms[Constraint.TOKENS] == c.blocked_ms[Constraint.STATE] == 0
    second = next(r for r in result.requests if r.rid == 1)
    first = next(r for r in result.requests if r.rid == 0)
    assert second.admitted_ms == first.finished_ms  # admitted in the step after the finish
    assert result.summary.binding is Constraint.RUNNING


def test_token_pages_block_when_t_runs_out():
    # T = 40 pages; each request needs ⌈(1000 + 8)/64⌉ = 16 pages: two fit, the third waits.
    plan = small_plan(max_total_tokens=40 * 64)
    w = workload(*(request(i, 0, {10 + i: 1000}) for i in range(3)))
    result = simulate(plan, w, SimConfig(integrity_every_steps=1))
    c = result.summary.counters
    assert c.blocked_ms[Constraint.TOKENS] > 0 and c.finished == 3
    assert result.summary.binding is Constraint.TOKENS
    assert c.peak_pages_pinned <= 40


def test_state_slots_block_when_k_runs_out():
    # What if K were 4 with N unchanged: each request holds 3 slots (working + 2 track).
    plan = small_plan()
    plan = dataclasses.replace(plan, capacity=dataclasses.replace(plan.capacity, state_slots=4))
    w = workload(request(0, 0, {1: 300}), request(1, 0, {2: 300}))
    result = simulate(plan, w, SimConfig(integrity_every_steps=1))
    c = result.summary.counters
    assert c.blocked_ms[Constraint.STATE] > 0 and c.finished == 2
    assert c.peak_slots_used <= 4


def test_a_request_that_can_never_fit_is_reported_unfinished():
    plan = small_plan(max_total_tokens=40 * 64)
    w = workload(request(0, 0, {1: 5000}), request(1, 10, {2: 100}))
    result = simulate(plan, w)
    assert [(u.rid, u.reason) for u in result.summary.unfinished] == [
        (0, "needs 79 token pages, the pool has 40")]
    assert result.summary.counters.finished == 1


def test_a_dense_model_simulates_without_a_state_component():
    """Llama-3.1-8B (GQA, page 1): the facade without states, SGLang's RadixCache rules —
    every cached token is a match point, so the whole shared prefix is a usable hit."""
    from kvledger.sglang.plan import make_plan

    w = workload(request(0, 0, {1: 100}), request(1, 1e7, {1: 100, 2: 20}))
    result = simulate(make_plan("llama-3.1-8b"), w, SimConfig(integrity_every_steps=1))
    s = result.summary
    # Request 0 caches its 100 prompt tokens and 7 fed outputs at release; request 1 matches
    # its prompt but the last token: the 100 tokens of segment 1.
    assert {r.rid: (r.hit_tokens, r.usable_hit_tokens) for r in result.requests} == {
        0: (0, 0), 1: (100, 100)}
    assert (s.state_slots, s.evicted_slots, s.counters.checkpoints_saved) == (0, 0, 0)
    assert s.counters.finished == 2


@pytest.mark.parametrize(("name", "deploy"), [
    ("chat", {"max_total_tokens": 300 * 64, "max_mamba_cache_size": 40}),
    ("agent", {"max_total_tokens": 900 * 64, "max_mamba_cache_size": 60}),
    ("shared-prompt", {"max_total_tokens": 400 * 64, "disable_overlap_schedule": True}),
    ("zipf", {"max_total_tokens": 600 * 64, "max_running_requests": 6}),
])
def test_conservation_under_pressure(name, deploy):
    w = GENERATORS[name].generate(GeneratorParams(num_requests=150, seed=5, rate_per_s=4))
    plan = small_plan(**deploy)
    result = simulate(plan, w, SimConfig(integrity_every_steps=1))
    s, c = result.summary, result.summary.counters
    # every request finishes or is reported unfinished
    assert c.finished + len(s.unfinished) == len(w.requests) == s.num_requests
    assert sorted([r.rid for r in result.requests] + [u.rid for u in s.unfinished]) == list(range(150))
    # hits never exceed the prompt (the last prompt token is always computed)
    for r in result.requests:
        assert r.usable_hit_tokens <= r.hit_tokens <= r.prompt_tokens - 1
        assert r.arrival_ms <= r.admitted_ms <= r.finished_ms
    # occupancy never exceeds capacity, and every page and slot is somewhere
    pages = sum(result.series.column(k) for k in (
        "pages_requests", "pages_cache_locked", "pages_cache_unlocked", "pages_free"))
    slots = sum(result.series.column(k) for k in ("slots_requests", "slots_cache", "slots_free"))
    assert np.all(pages == s.token_pages) and np.all(slots == s.state_slots)
    assert result.series.column("running").max() <= s.max_running_requests
    assert c.peak_pages_used <= s.token_pages and c.peak_slots_used <= s.state_slots
    assert s.evicted_pages > 0 or s.evicted_slots > 0  # the pools were small enough to evict
    assert c.decode_tokens == sum(r.output_tokens for r in w.requests
                                  if r.rid not in {u.rid for u in s.unfinished})


@settings(max_examples=25, deadline=None)
@given(
    drawn=prompts(segment_ids=6, segment_tokens=(1, 700), max_segments=4, requests=(1, 12),
                  spread_ms=5_000),
    pages=st.integers(12, 80), slots=st.integers(5, 30), running=st.integers(1, 6),
    chunk=st.sampled_from([64, 256, 8192]),
)
def test_any_workload_conserves_pages_slots_and_requests(drawn, pages, slots, running, chunk):
    w = from_prompts(drawn)
    plan = small_plan(max_total_tokens=pages * 64, max_mamba_cache_size=slots,
                      max_running_requests=running)
    result = simulate(plan, w, SimConfig(chunked_prefill_tokens=chunk, integrity_every_steps=1))
    s = result.summary
    assert s.counters.finished + len(s.unfinished) == len(w.requests)
    for r in result.requests:
        assert r.usable_hit_tokens <= r.hit_tokens < r.prompt_tokens
    assert result.series.column("running").max(initial=0) <= s.max_running_requests
    assert result.series.column("pages_free").min(initial=s.token_pages) >= 0
    assert s.counters.peak_pages_used <= s.token_pages
    assert s.counters.peak_slots_used <= s.state_slots
