"""Capacity in SGLang's order (SPEC §5), worked examples and failure modes."""

from __future__ import annotations

import dataclasses

import pytest

from factories import glm_layout
from kvledger.core.units import GiB, MiB
from kvledger.model.config import load_model
from kvledger.sglang.capacity import (
    CapacityError,
    Limit,
    MemoryInput,
    check_workload,
    plan_capacity,
)
from kvledger.sglang.deploy import Deployment
from kvledger.sglang.resolve import resolve
from kvledger.sglang.rules import RULES


def test_spec_worked_example_rest_100_gib():
    # SPEC §5: "Worked example (0.5.21 rules, scaled fp8, fp32 temporal, attn_tp 1,
    # rest = 100 GiB): K = 343, T = 7,795,136 tokens, N = K//5 = 68." rest is stated after the
    # multimodal reservation, so drop the vision section to feed rest = 100 GiB directly.
    lay = glm_layout()
    lay = dataclasses.replace(lay, model=dataclasses.replace(lay.model, is_multimodal=False))
    plan = plan_capacity(lay, MemoryInput.available(100 * GiB))
    assert (plan.state_slots, plan.max_total_tokens, plan.max_running_requests) == (
        343, 7_795_136, 68)
    assert plan.binding is Limit.STATE


def test_spec_multimodal_reservation():
    # SPEC §5: "With 100 GiB free after weights and mem_fraction_static 1.0 that gives K = 343,
    # T = 7,780,672, N = 68" — 100 MiB (SGLANG_VLM_CACHE_SIZE_MB) reserved for the vision cache.
    plan = plan_capacity(glm_layout(), MemoryInput.available(100 * GiB))
    assert plan.mm_reservation_bytes == 100 * MiB
    assert (plan.state_slots, plan.max_total_tokens, plan.max_running_requests) == (
        343, 7_780_672, 68)
    # Hand check of T: rest' = 100 GiB − 100 MiB − 344 slots × 147,619,840 B
    rest_tokens = 100 * GiB - 100 * MiB - 344 * 147_619_840
    assert plan.max_total_tokens == rest_tokens // 7_260 // 64 * 64
    # The pools never exceed what was budgeted.
    assert plan.state_pool_bytes + plan.max_total_tokens * plan.token_bytes <= plan.rest_bytes
    assert plan.unused_bytes >= 0


def test_0523_rules_page_256_and_33_byte_indexer():
    # SPEC §2: from 0.5.22 the page is 64·kpool = 256 and the index cache reserves
    # ceil(132/4) = 33 B/token/layer → 5,808 + 363 = 6,171 B/token scaled fp8.
    lay = glm_layout("sglang-0.5.23")
    plan = plan_capacity(lay, MemoryInput.available(100 * GiB))
    assert lay.page_tokens == 256 and plan.token_bytes == 6_171
    assert plan.max_total_tokens % 256 == 0


def test_max_mamba_cache_size_and_max_total_tokens_overrides():
    lay = glm_layout(max_mamba_cache_size=100, max_total_tokens=1_000_000)
    plan = plan_capacity(lay, MemoryInput.available(100 * GiB))
    assert plan.state_slots == 100
    assert plan.max_total_tokens == 1_000_000 // 64 * 64
    assert plan.limits[Limit.STATE] == 20


def test_max_mamba_cache_size_is_split_over_attention_dp():
    lay = glm_layout(tp_size=8, dp_size=8, enable_dp_attention=True, max_mamba_cache_size=800)
    assert plan_capacity(lay, MemoryInput.available(100 * GiB)).state_slots == 100


def test_configured_running_requests_binds():
    lay = glm_layout(max_running_requests=32)
    plan = plan_capacity(lay, MemoryInput.available(100 * GiB))
    assert plan.max_running_requests == 32 and plan.binding is Limit.CONFIGURED


def test_mem_fraction_slack():
    # 10 % of (available + weights) held back as slack.
    memory = MemoryInput.available(100 * GiB, weights_bytes=20 * GiB, mem_fraction_static=0.9)
    plan = plan_capacity(glm_layout(), memory)
    assert plan.slack_bytes == int(120 * GiB * (1 - 0.9))
    assert plan.rest_bytes == 100 * GiB - plan.slack_bytes - 100 * MiB


@pytest.mark.parametrize("available", [0, 100 * MiB, 1 * GiB // 8])
def test_too_small_memory_is_a_clear_error(available):
    with pytest.raises(CapacityError, match="state slot|nothing left|page"):
        plan_capacity(glm_layout(), MemoryInput.available(available))


def test_state_pool_larger_than_memory_is_a_clear_error():
    lay = glm_layout(max_mamba_cache_size=10_000)
    with pytest.raises(CapacityError, match="page"):
        plan_capacity(lay, MemoryInput.available(100 * GiB))


def test_workload_names_the_first_overflow():
    plan = plan_capacity(glm_layout(), MemoryInput.available(100 * GiB))
    check = check_workload(plan, 64, 131_072)
    # 64 requests × 5 slots = 320 ≤ 343 slots; 64 × 131,072 = 8.4M tokens > 7.78M.
    assert not check.fits and check.first_overflow.ledger == "token KV"
    assert check_workload(plan, 16, 131_072).fits
    check = check_workload(plan, 100, 1_000)
    assert check.first_overflow.ledger == "state slots"


def test_configured_running_requests_are_capped_at_half_the_tokens():
    # mem_cache/kv_cache_configurator.py, KVCacheConfigurator.resolve_max_num_reqs (both rule
    # sets): max_num_reqs = min(max_running_requests // attn_dp, token_capacity // 2), then
    # min(·, max_mamba_cache_size // ratio) on hybrids.
    lay = glm_layout(max_running_requests=4_000, max_total_tokens=4_096, max_mamba_cache_size=50_000)
    plan = plan_capacity(lay, MemoryInput.available(8_000 * GiB))
    assert plan.limits == {Limit.CONFIGURED: 4_000, Limit.TOKENS: 2_048, Limit.STATE: 10_000}
    assert plan.max_running_requests == 2_048 and plan.binding is Limit.TOKENS
    unset = plan_capacity(glm_layout(max_total_tokens=2_048, max_mamba_cache_size=50_000),
                          MemoryInput.available(8_000 * GiB))
    assert unset.max_running_requests == 2_048 // 2 and unset.binding is Limit.TOKENS


@pytest.mark.parametrize("rules", ["sglang-0.5.21", "sglang-0.5.23"])
def test_dense_configured_requests_capped_by_tokens(rules):
    # The case: Llama-3.1-8B, --max-running-requests 512 --max-total-tokens 256 →
    # resolve_max_num_reqs gives min(512, 256 // 2) = 128 (a dense model has no state cap).
    lay = resolve(load_model("llama-3.1-8b"),
                  Deployment(max_running_requests=512, max_total_tokens=256), RULES[rules])
    plan = plan_capacity(lay, MemoryInput.available(40 * GiB))
    assert plan.max_total_tokens == 256
    assert plan.limits == {Limit.CONFIGURED: 512, Limit.TOKENS: 128}
    assert plan.max_running_requests == 128


def test_request_beyond_the_context_length_does_not_fit():
    # The case: one 2,000,000-token request on GLM-5.3-Flash (context 1,048,576) used
    # to "fit" on memory alone; SGLang's tokenizer manager refuses an input longer than the
    # model's context length, so the context row fails first whatever the memory.
    plan = plan_capacity(glm_layout(), MemoryInput.available(8_000 * GiB))
    check = check_workload(plan, 1, 2_000_000)
    assert not check.fits and check.first_overflow.ledger == "context length"
    assert check.rows[0].capacity == 1_048_576 and check.rows[0].max_requests == 0
    assert check_workload(plan, 1, 1_048_576).fits
