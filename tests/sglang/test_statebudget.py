"""State pool K, verify scratch, T and N in every SGLang branch, against hand-derived numbers.

Source followed: mem_cache/kv_cache_configurator.py — `KVCacheConfigurator._handle_max_mamba_cache`
(K and the intermediate-state reservation), `_calculate_mamba_ratio` (slots per request:
1 radix off, 3 + 2 extra_buffer with overlap) and `resolve_max_num_reqs` (N). Per-slot bytes S
are the state ledger's (golden-tested in test_ledger_golden.py); every other number below is
worked out by hand from those formulas.
"""

from __future__ import annotations

import pytest

from factories import glm_layout
from kvledger.core.units import GiB, MiB
from kvledger.model.config import load_model
from kvledger.sglang.capacity import CapacityError, Limit, MemoryInput, plan_capacity
from kvledger.sglang.deploy import Deployment, DeploymentError, DsaBackend, SpecAlgorithm
from kvledger.sglang.plan import make_plan
from kvledger.sglang.resolve import resolve
from kvledger.sglang.rules import RULES
from kvledger.sglang.statebudget import StateSource

GLM_SLOT = 147_619_840  # B per state slot, GLM-5.3-Flash, fp32 temporal, attn_tp 1
RULE_SETS = ["sglang-0.5.21", "sglang-0.5.23"]
EAGLE4 = dict(speculative_algorithm=SpecAlgorithm.EAGLE, speculative_num_draft_tokens=4)


@pytest.mark.parametrize("rules", RULE_SETS)
def test_radix_off_boot_log_glm_three_state_rows(rules):
    # Boot log (RTX PRO 6000, fp8 raw = TRT-LLM DSA): --max-total-tokens 1048576
    # --max-running-requests 2 --mem-fraction-static 0.65 --disable-radix-cache → about 0.41 GB
    # of state. _handle_max_mamba_cache's radix-off branch: K = 2 // attn_dp 1 = 2, the pool
    # allocates K + 1 = 3 rows: 3 × 147,619,840 = 442,859,520 B = 0.41 GiB (SGLang's "GB").
    lay = glm_layout(rules, disable_radix_cache=True, max_running_requests=2,
                     max_total_tokens=1_048_576, mem_fraction_static=0.65,
                     dsa_backend=DsaBackend.TRTLLM)
    plan = plan_capacity(lay, MemoryInput.available(20 * GiB, mem_fraction_static=0.65))
    assert plan.state_budget.source is StateSource.RUNNING_REQUESTS
    assert plan.state_slots == 2 and plan.state_pool_bytes == 442_859_520
    assert round(plan.state_pool_bytes / GiB, 2) == 0.41
    assert lay.slots_per_request == 1  # _calculate_mamba_ratio: 1 with the radix cache off
    assert plan.max_total_tokens == 1_048_576
    assert plan.limits == {Limit.CONFIGURED: 2, Limit.TOKENS: 524_288, Limit.STATE: 2}
    assert plan.max_running_requests == 2


def test_radix_off_request_limit_is_split_over_dp_attention():
    # K = max_running_requests // attn_dp = 16 // 8 = 2 per rank; N = min(2, T // 2, 2 // 1).
    lay = glm_layout(disable_radix_cache=True, max_running_requests=16, tp_size=8, dp_size=8,
                     enable_dp_attention=True)
    plan = plan_capacity(lay, MemoryInput.available(60 * GiB))
    assert (plan.state_slots, plan.max_running_requests) == (2, 2)
    rest = 60 * GiB - 100 * MiB  # the multimodal reservation (SGLANG_VLM_CACHE_SIZE_MB)
    assert plan.max_total_tokens == (rest - 3 * GLM_SLOT) // 7_260 // 64 * 64


def test_radix_off_without_a_limit_uses_the_ratio():
    # Branch 3: K = floor(rest·0.9/1.9 / S) − 1; N = min(2048 heuristic, T // 2, K // 1).
    lay = glm_layout(disable_radix_cache=True)
    plan = plan_capacity(lay, MemoryInput.available(60 * GiB))
    rest = 60 * GiB - 100 * MiB
    assert plan.state_budget.source is StateSource.RATIO
    assert plan.state_slots == int(rest * 0.9 / 1.9 // GLM_SLOT) - 1 == 205
    assert plan.max_running_requests == 205 and plan.binding is Limit.STATE


def test_max_mamba_cache_size_beats_the_radix_off_request_limit():
    # _handle_max_mamba_cache tries --max-mamba-cache-size first.
    lay = glm_layout(disable_radix_cache=True, max_running_requests=8, max_mamba_cache_size=40)
    plan = plan_capacity(lay, MemoryInput.available(60 * GiB))
    assert plan.state_budget.source is StateSource.MAX_MAMBA_CACHE_SIZE
    assert plan.state_slots == 40
    assert plan.limits == {Limit.CONFIGURED: 8, Limit.TOKENS: plan.max_total_tokens // 2,
                           Limit.STATE: 40}


def test_mamba_full_memory_ratio_moves_budget_between_pools():
    # r = 0.5: B = rest/3 → K = floor(64,319,651,840 / 3 / 147,619,840) − 1 = 144.
    lay = glm_layout(mamba_full_memory_ratio=0.5)
    plan = plan_capacity(lay, MemoryInput.available(60 * GiB))
    assert plan.state_slots == 144
    assert plan.max_running_requests == 144 // 5


@pytest.mark.parametrize("rules, page, token_bytes, tokens", [
    # C_token = main 7,260 (or 6,171) + the MTP draft layer's 528 + 132 (or 33) = 7,920 / 6,732
    ("sglang-0.5.21", 64, 7_920, 4_318_784),
    ("sglang-0.5.23", 256, 6_732, 5_080_832),
])
def test_speculative_glm_joint_state_solve(rules, page, token_bytes, tokens):
    # rest = 60 GiB − 100 MiB = 64,319,651,840 B; B = rest·0.9/1.9 = 30,467,203,503.2 B
    # K = floor((B − S·(1 + 4)) / (S·(1 + 4/5))) = floor(29,729,104,303.2 / 265,715,712) = 111
    # n = min(48 // 1, 111 // 5) = 22; scratch = S·(22 + 1)·4 = 13,581,025,280 B
    # rest' = rest − scratch − 112·S = 34,205,204,480 B; T = floor(rest' / C_token / P)·P
    lay = glm_layout(rules, max_running_requests=48, **EAGLE4)
    plan = plan_capacity(lay, MemoryInput.available(60 * GiB))
    assert plan.rest_bytes == 64_319_651_840
    assert plan.state_slots == 111
    assert plan.state_budget.verify_requests == 22
    assert plan.verify_bytes == 13_581_025_280
    assert plan.token_bytes == token_bytes and lay.page_tokens == page
    assert plan.max_total_tokens == 34_205_204_480 // token_bytes // page * page == tokens
    assert plan.max_running_requests == 22 and plan.binding is Limit.STATE
    # The scratch as MambaPool allocates it: (34 layers, 23, 4, *shape) per pool.
    ssm, conv = plan.verify.rows
    assert ssm.total_bytes == 34 * 23 * 4 * 64 * 128 * 128 * 4
    assert conv.total_bytes == 34 * 23 * 4 * 3 * 24_576 * 2
    assert plan.verify.total_bytes == plan.verify_bytes


@pytest.mark.parametrize("rules", RULE_SETS)
@pytest.mark.parametrize("model, slot, token_bytes, k, n_verify, tokens", [
    # Qwen3-Next (bf16 GQA, GDN): rest = 60 GiB = 64,424,509,440; B = 30,516,872,892.6
    # K = floor((B − 5·77,266,944) / (1.8·77,266,944)) = 216; n = min(48, 43) = 43
    # scratch = 77,266,944·44·4; T = (rest − scratch − 217·S) // 24,576
    ("qwen3-next-80b-a3b-instruct", 77_266_944, 24_576, 216, 43, 1_385_848),
    # Kimi-Linear (bf16 MLA, KDA): K = floor((B − 5·43,417,600) / (1.8·43,417,600)) = 387;
    # n = min(48, 77) = 48; scratch = 43,417,600·49·4 = 8,509,849,600
    ("kimi-linear-48b-a3b-instruct", 43_417_600, 8_064, 387, 48, 4_844_820),
    # Nemotron-H 56B (Mamba2): K = floor((B − 5·912,605,184) / (1.8·912,605,184)) = 15;
    # n = min(48, 3) = 3; scratch = 912,605,184·4·4 = 14,601,682,944
    ("nemotron-h-56b-base-8k", 912_605_184, 40_960, 15, 3, 859_891),
])
def test_speculative_hybrids(rules, model, slot, token_bytes, k, n_verify, tokens):
    dep = Deployment(max_running_requests=48, **EAGLE4)
    plan = plan_capacity(resolve(load_model(model), dep, RULES[rules]),
                         MemoryInput.available(60 * GiB))
    rest = 60 * GiB
    budget = rest * 0.9 / 1.9
    # the budget's cell; with no --speculative-draft-model-path it leaves out the MTP layer
    # the draft worker still allocates for Qwen3-Next and Nemotron-H (kvledger.sglang.draftlayers)
    assert plan.slot_bytes == slot and (plan.budget_token_bytes or plan.token_bytes) == token_bytes
    assert plan.state_slots == int((budget - 5 * slot) // (1.8 * slot)) == k
    assert plan.state_budget.verify_requests == n_verify
    assert plan.verify_bytes == slot * (n_verify + 1) * 4
    assert plan.max_total_tokens == (rest - plan.verify_bytes - (k + 1) * slot) // token_bytes
    assert plan.max_total_tokens == tokens
    assert plan.max_running_requests == min(48, tokens // 2, k // 5)


@pytest.mark.parametrize("rules", RULE_SETS)
def test_speculative_dense_model_keeps_its_token_pool(rules):
    # Llama-3.1-8B has no state pool and no MTP layers in the config: T is unchanged
    # (60 GiB / 131,072 B = 491,520), N = min(48, T // 2) under the speculative default of 48.
    plain = make_plan("llama-3.1-8b", rules=rules, available_gib=60)
    spec = make_plan("llama-3.1-8b", Deployment(**EAGLE4), rules=rules, available_gib=60)
    assert plain.capacity.max_total_tokens == spec.capacity.max_total_tokens == 491_520
    assert spec.capacity.max_running_requests == 48 and spec.capacity.verify is None
    assert any("SGLang sets 48" in note for note in spec.notes)


def test_speculative_with_max_mamba_cache_size_reserves_capped_scratch():
    # Branch 1 with speculation: K = 100; n = min(48, 100 // 5) = 20; scratch = S·21·4.
    lay = glm_layout(max_mamba_cache_size=100, max_running_requests=48, **EAGLE4)
    plan = plan_capacity(lay, MemoryInput.available(60 * GiB))
    assert plan.state_slots == 100 and plan.state_budget.verify_requests == 20
    assert plan.verify_bytes == GLM_SLOT * 21 * 4


def test_speculative_radix_off_scratch_covers_every_slot():
    # Branch 2 with speculation: K = 8; scratch = S·(K + 1)·D = S·9·4.
    lay = glm_layout(disable_radix_cache=True, max_running_requests=8, **EAGLE4)
    plan = plan_capacity(lay, MemoryInput.available(60 * GiB))
    assert plan.state_slots == 8 and plan.verify_bytes == GLM_SLOT * 9 * 4
    assert plan.max_running_requests == 8


def test_speculative_scratch_that_leaves_no_slot_is_refused():
    lay = glm_layout(max_running_requests=48, **EAGLE4)
    # _handle_max_mamba_cache refuses a non-positive pool with this message.
    with pytest.raises(CapacityError, match="with 4 draft tokens of verify scratch "
                       r"\(SGLang: \"Not enough GPU memory for hybrid \(mamba/linear-attention\) "
                       "state cache. Computed max_mamba_cache_size=-"):
        plan_capacity(lay, MemoryInput.available(1 * GiB))


def test_no_request_fits_quotes_resolve_max_num_reqs():
    # K = 4 slots at 5 per request: resolve_max_num_reqs' "too small to serve any requests".
    lay = glm_layout(max_mamba_cache_size=4)
    with pytest.raises(CapacityError, match="state cache is too small to serve any requests. "
                       "max_mamba_cache_size=4, mamba_ratio=5, resulting max_num_reqs=0"):
        plan_capacity(lay, MemoryInput.available(60 * GiB))


def test_request_limit_below_the_dp_size_per_rule_set():
    # 0.5.21 refuses 4 requests over 8 attention-DP workers; 0.5.23 gives each max(1, 4 // 8).
    deploy = dict(tp_size=8, dp_size=8, enable_dp_attention=True, max_running_requests=4)
    with pytest.raises(DeploymentError, match="--max-running-requests 4: split over 8 "
                       "attention-DP ranks this leaves 0 per rank"):
        glm_layout("sglang-0.5.21", **deploy)
    lay = glm_layout("sglang-0.5.23", **deploy)
    plan = plan_capacity(lay, MemoryInput.available(60 * GiB))
    assert plan.limits[Limit.CONFIGURED] == 1 and plan.max_running_requests == 1
    radix_off = plan_capacity(glm_layout("sglang-0.5.23", disable_radix_cache=True, **deploy),
                              MemoryInput.available(60 * GiB))
    assert radix_off.state_slots == 1
