"""The 8-bit checkpoint what-if (`cache.policies.lossy_states`): planner arithmetic only."""

from __future__ import annotations

import pytest

from kvledger.cache.policies.lossy_states import LossyStates, checkpoint_bytes, lossy_states
from kvledger.sglang.deploy import Deployment, KVDtype
from kvledger.sglang.plan import make_plan


def test_glm_at_60_gib_more_than_triples_the_cached_checkpoints():
    # GLM-5.3-Flash, 60 GiB, fp8 KV: K 205, N 41, 3 held. One layer's slot: conv (3, 24576)
    # bf16 = 147,456 B + temporal (64, 128, 128) fp32 = 4,194,304 B; × 34 KDA layers.
    plan = make_plan(deployment=Deployment(kv_cache_dtype=KVDtype.FP8_E4M3), available_gib=60)
    e = lossy_states(plan)
    assert e.slot_bytes == 34 * (147_456 + 4_194_304) == 147_619_840
    # 8-bit: conv 73,728 + 3 scales · 4 B; temporal 1,048,576 + 8,192 scales · 4 B
    assert e.checkpoint_slot_bytes == 34 * (73_728 + 12 + 1_048_576 + 32_768) == 39_272_856
    assert (e.state_slots, e.pinned_slots) == (205, 123)
    assert (e.cache_full_slots, e.cache_lossy_slots, e.gained_slots) == (82, 308, 226)


def test_checkpoint_bytes_one_scale_per_last_dim_row():
    from kvledger.sglang.specs import StateSpec

    spec = StateSpec(conv_shape=(2, 10), conv_itemsize=2, temporal_shape=(5, 10),
                     temporal_itemsize=4)
    assert checkpoint_bytes(spec, layers=3) == 3 * ((20 + 2 * 4) + (50 + 5 * 4))


def test_no_room_left_gains_nothing():
    e = LossyStates(state_slots=100, pinned_slots=120, slot_bytes=10, checkpoint_slot_bytes=3)
    assert (e.cache_full_slots, e.cache_lossy_slots, e.gained_slots) == (0, 0, 0)


def test_bad_sizes_and_dense_models_are_errors():
    with pytest.raises(ValueError, match="expected 1 to the full slot's 10 B"):
        LossyStates(state_slots=5, pinned_slots=1, slot_bytes=10, checkpoint_slot_bytes=11)
    with pytest.raises(ValueError, match="no linear-attention states"):
        lossy_states(make_plan(model="llama-3.1-8b"))


def test_lossy_plan_gives_the_gained_slots_to_the_pool_and_is_labelled():
    from kvledger.cache.policies.lossy_states import LossyCheckpoints, label, lossy_plan

    plan = make_plan(deployment=Deployment(kv_cache_dtype=KVDtype.FP8_E4M3), available_gib=60)
    e = lossy_states(plan)
    what_if = lossy_plan(plan, e, LossyCheckpoints.FP8)
    assert what_if.capacity.state_slots == 205 + 226
    assert what_if.capacity.max_running_requests == plan.capacity.max_running_requests == 41
    # at N running the what-if's cache room is exactly the 8-bit share: 431 − 123 = 308
    held = what_if.capacity.max_running_requests * what_if.layout.held_slots_per_request
    assert what_if.capacity.state_slots - held == e.cache_lossy_slots == 308
    assert what_if.notes[-1] == label(LossyCheckpoints.FP8) and not plan.notes
    assert label(LossyCheckpoints.INT8).startswith("what-if (lossy, not bit-exact)")
    assert label(LossyCheckpoints.INT8).endswith("(int8)")
