"""The shared track-slot what-if (`cache.policies.slot_economy`): arithmetic, inputs, plan."""

from __future__ import annotations

import pytest

from kvledger.cache.policies.slot_economy import (
    DEFAULT_POOL_SLOTS,
    LABEL,
    SlotEconomy,
    parse_slot_economy,
    shared_track_plan,
    slot_economy,
)
from kvledger.sglang.deploy import Deployment, KVDtype
from kvledger.sglang.plan import make_plan


def test_default_plan_frees_two_track_slots_per_request_less_the_pool():
    # GLM-5.3-Flash default plan, fp8 KV: K 343, N 68, 3 held (working + ping-pong pair,
    # SGLang's HybridReqToTokenPool.alloc with the overlap scheduler).
    plan = make_plan(deployment=Deployment(kv_cache_dtype=KVDtype.FP8_E4M3))
    e = slot_economy(plan)
    assert (e.state_slots, e.running_requests, e.held_slots_per_request) == (343, 68, 3)
    assert e.pool_slots == DEFAULT_POOL_SLOTS == 8
    assert (e.pinned_today_slots, e.pinned_shared_slots, e.freed_slots) == (204, 76, 128)
    assert (e.cacheable_today_slots, e.cacheable_shared_slots) == (139, 267)


def test_without_overlap_one_track_slot_per_request():
    plan = make_plan(deployment=Deployment(kv_cache_dtype=KVDtype.FP8_E4M3,
                                           disable_overlap_schedule=True))
    e = slot_economy(plan, 4)
    assert e.held_slots_per_request == 2
    assert e.freed_slots == e.running_requests * 2 - (e.running_requests + 4)


def test_shared_plan_gives_the_freed_slots_to_the_pool_and_is_labelled():
    plan = make_plan(deployment=Deployment(kv_cache_dtype=KVDtype.FP8_E4M3))
    e = slot_economy(plan, 10)
    what_if = shared_track_plan(plan, e)
    assert what_if.capacity.state_slots == 343 + 126
    assert what_if.capacity.max_running_requests == plan.capacity.max_running_requests
    assert what_if.notes[-1] == LABEL and LABEL not in plan.notes
    # at N running, the what-if's cache room is exactly the shared economy's
    held = what_if.capacity.max_running_requests * what_if.layout.held_slots_per_request
    assert what_if.capacity.state_slots - held == e.cacheable_shared_slots


@pytest.mark.parametrize(("pool", "message"), [(0, "expected a pool of 1 to 136"),
                                                (137, "expected a pool of 1 to 136")])
def test_pool_out_of_range(pool, message):
    with pytest.raises(ValueError, match=message):
        SlotEconomy(state_slots=343, running_requests=68, held_slots_per_request=3,
                    pool_slots=pool)


def test_no_track_slots_is_an_error():
    # no_buffer (and radix off) hold one working slot: there is nothing to share
    with pytest.raises(ValueError, match="needs track slots per request"):
        SlotEconomy(state_slots=343, running_requests=68, held_slots_per_request=1,
                    pool_slots=8)


@pytest.mark.parametrize(("text", "pool"), [("shared-track", 8), ("shared-track=3", 3)])
def test_parse(text, pool):
    assert parse_slot_economy(text) == pool


@pytest.mark.parametrize(("text", "message"), [("pooled", "expected shared-track"),
                                                ("shared-track=x", "whole number"),
                                                ("shared-track=-1", "whole number")])
def test_parse_rejects(text, message):
    with pytest.raises(ValueError, match=message):
        parse_slot_economy(text)
