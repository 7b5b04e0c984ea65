"""The Mamba scheduler strategy and state slots per request (sglang/mamba_strategy.py).

Numbers from SGLang's mem_cache/memory_pool.py (HybridReqToTokenPool.alloc: a working slot plus
mamba_ping_pong_track_buffer_size track slots) and arg_groups/mamba_hook.py
(validate_mamba_extra_buffer: track interval 256, FLA chunk 64)."""

from __future__ import annotations

import pytest

from kvledger.model.config import load_model
from kvledger.sglang.deploy import Deployment, DeploymentError, LinearBackend, MambaStrategy
from kvledger.sglang.mamba_strategy import (
    check_extra_buffer,
    resolve_strategy,
    state_slots_per_request,
)
from kvledger.sglang.rules import RULES

EXTRA = MambaStrategy.EXTRA_BUFFER


@pytest.mark.parametrize(("dep", "slots"), [
    (Deployment(mamba_strategy=EXTRA), (5, 3)),  # overlap on: ping-pong pair
    (Deployment(mamba_strategy=EXTRA, disable_overlap_schedule=True), (4, 2)),
    (Deployment(mamba_strategy=MambaStrategy.NO_BUFFER, disable_overlap_schedule=True), (3, 1)),
    (Deployment(mamba_strategy=EXTRA, disable_radix_cache=True), (1, 1)),
])
def test_slots_reserved_and_held(dep, slots):
    assert state_slots_per_request(dep) == slots


def test_track_slots_follow_speculation_in_the_older_releases():
    # 0.5.8/0.5.9: 2 track slots without speculative decoding, whatever the overlap says
    dep = Deployment(mamba_strategy=EXTRA, disable_overlap_schedule=True)
    assert state_slots_per_request(dep, track_follows_overlap=False) == (5, 3)


def test_auto_is_extra_buffer_with_triton_else_no_buffer_and_overlap_off():
    glm = load_model()
    notes: list[str] = []
    dep = resolve_strategy(glm, Deployment(linear_attn_backend=LinearBackend.TRITON),
                           RULES["sglang-0.5.21"], notes)
    assert dep.mamba_strategy is EXTRA and not notes
    qwen = load_model("qwen3-next-80b-a3b-instruct")
    dep = resolve_strategy(qwen, Deployment(linear_attn_backend=LinearBackend.TRITON),
                           RULES["sglang-0.5.8"], notes)  # 0.5.8: auto is always no_buffer
    assert dep.mamba_strategy is MambaStrategy.NO_BUFFER and dep.disable_overlap_schedule
    assert notes == ["mamba strategy auto → no_buffer: overlap scheduler turned off"]
    # and no_buffer needs page 1, which a DSA model (GLM-5.3-Flash) cannot use
    with pytest.raises(DeploymentError, match="no_buffer: needs page size 1"):
        resolve_strategy(glm, Deployment(), RULES["sglang-0.5.8"], [])


@pytest.mark.parametrize(("page", "draft", "message"), [
    (96, 0, "divide the track interval"),        # 256 % 96
    (128, 0, None), (32, 0, None), (256, 0, None),
    (16, 257, "greater than or equal to speculative_num_draft_tokens 257"),
])
def test_extra_buffer_page_and_draft_checks(page, draft, message):
    if message is None:
        check_extra_buffer(page, draft)
        return
    with pytest.raises(DeploymentError, match=message):
        check_extra_buffer(page, draft)
