"""The sglang-0.5.8 and sglang-0.5.9 rule sets, field by field, against hand-derived numbers.

Source read: the sglang 0.5.8 and 0.5.9 wheels, python/sglang/srt/ —
model_executor/model_runner_kv_cache_mixin.py (`handle_max_mamba_cache`,
`get_cell_size_per_token`, `profile_max_num_token`, `init_memory_pool`), model_runner.py
(`ModelRunner.initialize`, "Init max running requests"), server_args.py
(`_handle_missing_default_values`, `_handle_model_specific_adjustments`,
`_handle_gpu_memory_settings`) and mem_cache/memory_pool.py (`HybridReqToTokenPool`,
`NSATokenToKVPool`). Slot and row bytes are the ledgers' (golden-tested elsewhere).
"""

from __future__ import annotations

import pytest

from kvledger.core.gpus import get_gpu
from kvledger.core.units import GiB
from kvledger.logs.detect import sglang_rules_for
from kvledger.model.config import load_model
from kvledger.sglang.budgetcell import allocated_token_bytes, budget_token_bytes
from kvledger.sglang.capacity import Limit, MemoryInput, plan_capacity
from kvledger.sglang.deploy import (
    Deployment,
    DeploymentError,
    DsaBackend,
    KVDtype,
    MambaStrategy,
    SpecAlgorithm,
)
from kvledger.sglang.plan import make_plan
from kvledger.sglang.requestlimits import request_limits
from kvledger.sglang.resolve import resolve
from kvledger.sglang.rules import RULES
from kvledger.sglang.statebudget import StateSource

QWEN3_NEXT = "qwen3-next-80b-a3b-instruct"
SLOT = 38_633_472  # B per state slot, Qwen3-Next-80B at TP 2 (36 GDN layers, fp32 temporal)
TOKEN = 12_288  # B per token, 12 full layers x 1 KV head per rank x 256 x 2 (K, V) x 2 B
REST = 50 * GiB
FP8 = Deployment(kv_cache_dtype=KVDtype.FP8_E4M3)


def _qwen_plan(rules: str, **deploy):
    lay = resolve(load_model(QWEN3_NEXT), Deployment(tp_size=2, **deploy), RULES[rules])
    return plan_capacity(lay, MemoryInput.available(REST))


@pytest.mark.parametrize("rules", ["sglang-0.5.8", "sglang-0.5.9"])
def test_ratio_keeps_no_slot_back_and_charges_k_slots(rules):
    # B = 50 GiB x 0.9 / 1.9 = 25,430,727,410 B; K = floor(B / S) = 658 (0.5.21: 658 - 1 = 657),
    # charged K x S either way, so T is the same: floor((50 GiB - 658 S) / 12,288) = 2,300,314.
    # auto is no_buffer (3 slots per request): N = min(4,096, T // 2, 658 // 3) = 219; 0.5.21's
    # auto extra_buffer reserves 5: 657 // 5 = 131.
    plan, p21 = _qwen_plan(rules), _qwen_plan("sglang-0.5.21")
    assert (plan.state_slots, plan.state_budget.charged_slots) == (658, 658)
    assert (p21.state_slots, p21.state_budget.charged_slots) == (657, 658)
    assert plan.max_total_tokens == p21.max_total_tokens == (REST - 658 * SLOT) // TOKEN == 2_300_314
    assert plan.layout.deployment.mamba_strategy is MambaStrategy.NO_BUFFER
    assert p21.layout.deployment.mamba_strategy is MambaStrategy.EXTRA_BUFFER
    assert (plan.max_running_requests, p21.max_running_requests) == (219, 131)


def test_radix_off_with_a_limit_charges_one_slot_less():
    # K = 16 both ways; 0.5.8 charges 16 S, 0.5.21 17 S: one slot is 38,633,472 / 12,288 =
    # 3,144 tokens more (the Kimi-Linear log of sglang#17830 shows the same one slot).
    p8 = _qwen_plan("sglang-0.5.8", disable_radix_cache=True, max_running_requests=16)
    p21 = _qwen_plan("sglang-0.5.21", disable_radix_cache=True, max_running_requests=16)
    assert p8.state_budget.source is p21.state_budget.source is StateSource.RUNNING_REQUESTS
    assert p8.max_total_tokens == (REST - 16 * SLOT) // TOKEN == 4_318_762
    assert p8.max_total_tokens - p21.max_total_tokens == SLOT // TOKEN == 3_144


def test_radix_off_without_a_limit_is_512_slots_in_058_the_ratio_in_059():
    # 0.5.8: `server_args.max_mamba_cache_size = 512`; T = (50 GiB - 512 S) // 12,288 =
    # 2,759,338, N = min(heuristic, T // 2, 512 // 1) = 512. 0.5.9 sizes it by the ratio (658).
    p8 = _qwen_plan("sglang-0.5.8", disable_radix_cache=True)
    assert (p8.state_budget.source, p8.state_slots) == (StateSource.RADIX_OFF_DEFAULT, 512)
    assert (p8.max_total_tokens, p8.max_running_requests) == (2_759_338, 512)
    p9 = _qwen_plan("sglang-0.5.9", disable_radix_cache=True)
    assert (p9.state_budget.source, p9.state_slots) == (StateSource.RATIO, 658)


def test_speculative_scratch_leaves_the_rest_first():
    # n = 8 requests, D = 4: S x 8 x 4 = 1,236,271,104 B leave the rest, then K = floor(B'/S)
    # with B' = (50 GiB - scratch) x 0.9 / 1.9: floor(24,845,125,308 / 38,633,472) = 643.
    plan = _qwen_plan("sglang-0.5.8", speculative_algorithm=SpecAlgorithm.EAGLE,
                      speculative_num_draft_tokens=4, max_running_requests=8)
    assert plan.verify_bytes == SLOT * 8 * 4 == 1_236_271_104
    assert plan.state_budget.verify_requests == 8
    assert plan.state_slots == int((REST - 1_236_271_104) * 0.9 / 1.9 // SLOT) == 643


def test_track_slots_follow_speculation_not_overlap():
    # extra_buffer: 3 + 2 track slots without speculation, 3 + 1 with it (HybridReqToTokenPool:
    # `2 if speculative_num_draft_tokens is None else 1`); 0.5.21 keys them on overlap.
    def slots(rules, **deploy):
        lay = resolve(load_model(QWEN3_NEXT), Deployment(
            tp_size=2, mamba_strategy=MambaStrategy.EXTRA_BUFFER, **deploy), RULES[rules])
        return lay.slots_per_request, lay.held_slots_per_request
    no_overlap = dict(disable_overlap_schedule=True)
    spec = dict(speculative_algorithm=SpecAlgorithm.EAGLE, speculative_num_draft_tokens=4,
                max_running_requests=8)
    assert slots("sglang-0.5.8", **no_overlap) == (5, 3)
    assert slots("sglang-0.5.21", **no_overlap) == (4, 2)
    assert slots("sglang-0.5.8", **spec) == (4, 2)
    assert slots("sglang-0.5.21", **spec) == (5, 3)


def test_dsa_budget_cell_is_unscaled_and_leaves_out_the_draft():
    # DeepSeek-V3.2 fp8: 61 x (512 + 64) x 1 B + 61 x 132 index = 43,188 B charged, 61 x (656 +
    # 132) = 48,068 allocated. 100 GiB: T = floor(100 GiB / 43,188) // 64 x 64 = 2,486,144
    # (0.5.21: 2,233,792). With an MTP draft the pools add its 788 B, the 0.5.8 cell does not.
    ds = load_model("deepseek-v3.2")
    p8 = plan_capacity(resolve(ds, FP8, RULES["sglang-0.5.8"]), MemoryInput.available(100 * GiB))
    p21 = plan_capacity(resolve(ds, FP8, RULES["sglang-0.5.21"]), MemoryInput.available(100 * GiB))
    assert (p8.budget_token_bytes, p8.token_bytes, p21.budget_token_bytes) == (43_188, 48_068, None)
    assert p8.max_total_tokens == 100 * GiB // 43_188 // 64 * 64 == 2_486_144
    assert p21.max_total_tokens == 100 * GiB // 48_068 // 64 * 64 == 2_233_792
    spec = Deployment(kv_cache_dtype=KVDtype.FP8_E4M3, speculative_algorithm=SpecAlgorithm.EAGLE,
                      speculative_num_draft_tokens=4, max_running_requests=48)
    for rules, charged in (("sglang-0.5.8", 43_188), ("sglang-0.5.21", 48_856)):
        lay = resolve(ds, spec, RULES[rules])
        assert (budget_token_bytes(lay), allocated_token_bytes(lay)) == (charged, 48_856)


def test_dsa_fp8_backend_and_trtllm_row():
    # fp8 on Blackwell: 0.5.8/0.5.9 default to flashmla (scaled 656 B row), 0.5.21 to trtllm
    # (raw 576). An explicit trtllm: 0.5.8's NSATokenToKVPool still stores the scaled row,
    # 0.5.9's calculate_mla_kv_cache_dim the raw one.
    ds = load_model("deepseek-v3.2")
    for rules, backend, row in (("sglang-0.5.8", DsaBackend.FLASHMLA_SPARSE, 656),
                                ("sglang-0.5.9", DsaBackend.FLASHMLA_SPARSE, 656),
                                ("sglang-0.5.21", DsaBackend.TRTLLM, 576)):
        lay = resolve(ds, FP8, RULES[rules], blackwell=True)
        assert (lay.deployment.dsa_backend, lay.kv_row.row_bytes) == (backend, row)
    trt = Deployment(kv_cache_dtype=KVDtype.FP8_E4M3, dsa_backend=DsaBackend.TRTLLM)
    assert resolve(ds, trt, RULES["sglang-0.5.8"]).kv_row.row_bytes == 656
    assert resolve(ds, trt, RULES["sglang-0.5.9"]).kv_row.row_bytes == 576


def test_rocm_dsa_page():
    ds, mi355x = load_model("deepseek-v3.2"), get_gpu("mi355x")
    assert resolve(ds, FP8, RULES["sglang-0.5.8"], gpu=mi355x).page_tokens == 1
    assert resolve(ds, FP8, RULES["sglang-0.5.9"], rocm=True).page_tokens == 1
    lay21 = resolve(ds, FP8, RULES["sglang-0.5.21"], gpu=mi355x)
    assert lay21.page_tokens == 64 and "aiter's preshuffle" in lay21.notes[-1]
    assert resolve(ds, FP8, RULES["sglang-0.5.8"]).page_tokens == 64  # CUDA


def test_configured_limit_is_not_capped_at_half_the_tokens():
    # 256 tokens, --max-running-requests 512: 0.5.8's N is the limit (the unset limit alone is
    # capped at T // 2); 0.5.21 caps it at 128.
    llama = load_model("llama-3.1-8b")
    dep = Deployment(max_running_requests=512)
    assert request_limits(resolve(llama, dep, RULES["sglang-0.5.8"]), tokens=256,
                          state_slots=None) == {Limit.CONFIGURED: 512}
    assert request_limits(resolve(llama, dep, RULES["sglang-0.5.21"]), tokens=256,
                          state_slots=None)[Limit.TOKENS] == 128


def test_no_multimodal_reservation():
    # 0.5.21 takes SGLANG_VLM_CACHE_SIZE_MB (100 MiB) from the budget of a multimodal model
    q35 = load_model("qwen3.5-35b-a3b")
    for rules, reserved in (("sglang-0.5.8", 0), ("sglang-0.5.21", 100 * 2**20)):
        plan = plan_capacity(resolve(q35, Deployment(), RULES[rules]),
                             MemoryInput.available(40 * GiB))
        assert (plan.mm_reservation_bytes, plan.rest_bytes) == (reserved, 40 * GiB - reserved)


def test_refusals_automatic_fraction_and_dcp():
    with pytest.raises(ValueError, match="--mem-fraction-static: .*not sglang-0.5.8's"):
        make_plan("llama-3.1-8b", rules="sglang-0.5.8", gpu="H100")
    given = make_plan("llama-3.1-8b", Deployment(mem_fraction_static=0.85), rules="sglang-0.5.8",
                      gpu="H100")
    assert given.capacity.memory.mem_fraction_static == 0.85
    with pytest.raises(DeploymentError, match="SGLang 0.5.9 has no decode context parallelism"):
        resolve(load_model("deepseek-v3"), Deployment(tp_size=8, dcp_size=2), RULES["sglang-0.5.9"])


@pytest.mark.parametrize("version,rules,noted", [
    ("0.5.8.post1-rocm720-mi35x-20260218", "sglang-0.5.8", False),
    ("0.5.9-rocm720-mi35x-20260225", "sglang-0.5.9", False),
    ("0.5.2", "sglang-0.5.8", True),  # before the first: the next one up, said
    ("0.5.15", "sglang-0.5.21", True),
])
def test_named_release_picks_the_early_rule_sets(version, rules, noted):
    name, note = sglang_rules_for(version)
    assert name == rules and (note is not None) == noted
