"""Prefill/decode roles: kvledger.sglang.roles, rolepools and the role rules of memfraction.

Engine source followed (sglang 0.5.21 and 0.5.23 release wheels, python/sglang/srt/):
arg_groups/pd_disaggregation_hook.py `handle_pd_disaggregation`; mem_cache/
kv_cache_configurator.py `_handle_max_mamba_cache`, `_calculate_mamba_ratio`,
`_build_req_to_token_pool`; disaggregation/decode.py `HybridMambaDecodeReqToTokenPool`,
`DecodeReqToTokenPool`; arg_groups/memory_hook.py `handle_gpu_memory_settings`,
`reserve_for_graph_mb`. GLM-5.3-Flash numbers: fp8 rows, 100 GiB after weights (SPEC §5).
"""

from __future__ import annotations

import pytest

from kvledger.core.errors import DeploymentError
from kvledger.sglang.deploy import DisaggMode
from kvledger.sglang.launch import parse_flags
from kvledger.sglang.memfraction import auto_mem_fraction_static
from kvledger.sglang.plan import make_plan
from kvledger.sglang.roles import default_extra_slots
from kvledger.sglang.statebudget import StateSource

SLOT = 147_619_840  # GLM-5.3-Flash state slot, fp32 temporal state, attn_tp 1
REST = 107_269_324_800  # 100 GiB − the 100 MiB multimodal reservation
FP8 = ["--kv-cache-dtype", "fp8_e4m3"]
MTP = ["--speculative-algorithm", "NEXTN", "--speculative-num-steps", "3",
       "--speculative-eagle-topk", "1"]


def plan(flags, rules="sglang-0.5.21", model="glm-5.3-flash", gpu=None):
    return make_plan(model, parse_flags(flags).deployment, rules=rules, gpu=gpu)


def test_decode_forces_the_radix_cache_off_so_n_equals_k():
    # handle_pd_disaggregation: disable_radix_cache=True; _calculate_mamba_ratio → 1.
    agg, dec = plan(FP8), plan(FP8 + ["--disaggregation-mode", "decode"])
    assert (agg.capacity.state_slots, agg.capacity.max_running_requests) == (343, 68)  # 343 // 5
    assert dec.deployment.disable_radix_cache and dec.layout.slots_per_request == 1
    assert (dec.capacity.state_slots, dec.capacity.max_running_requests) == (343, 343)
    assert dec.capacity.state_budget.source is StateSource.RATIO


def test_decode_radix_cache_can_be_kept():
    dec = plan(FP8 + ["--disaggregation-mode", "decode",
                      "--disaggregation-decode-enable-radix-cache"])
    assert not dec.deployment.disable_radix_cache
    assert dec.capacity.max_running_requests == 68


@pytest.mark.parametrize(("requests", "dp", "extra"), [
    (None, 1, 0), (32, 1, 64), (33, 1, 0), (64, 2, 64), (16, 1, 32)])
def test_default_extra_slots(requests, dp, extra):
    # per_worker = requests // dp_size; 2 × per_worker when ≤ 32
    assert default_extra_slots(requests, dp) == extra


def test_decode_extra_slots_below_the_dp_size_are_a_rule_field():
    # 4 requests over 8 replicas (no DP attention): 0.5.21 4 // 8 = 0 → no extra rows;
    # 0.5.23 floors the per-worker limit at 1 → 2.
    flags = ["--disaggregation-mode", "decode", "--max-running-requests", "4", "--dp", "8"]
    old = plan(flags, model="llama-3.1-8b")
    new = plan(flags, model="llama-3.1-8b", rules="sglang-0.5.23")
    assert old.deployment.disaggregation_decode_extra_slots == 0
    assert new.deployment.disaggregation_decode_extra_slots == 2


def test_decode_extra_slots_use_the_limit_as_given_not_the_speculative_default():
    # handle_pd_disaggregation runs before handle_speculative_decoding sets 48.
    dec = plan(FP8 + MTP + ["--disaggregation-mode", "decode"])
    assert dec.deployment.max_running_requests == 48
    assert dec.deployment.disaggregation_decode_extra_slots == 0


def test_decode_state_pool_allocates_past_the_budget():
    # Radix off + a request limit: K = 32 (_handle_max_mamba_cache), budget K + 1 = 33 slots.
    # HybridMambaDecodeReqToTokenPool: max(K, (N + extra) · 1) + 1 = max(32, 96) + 1 = 97.
    dec = plan(FP8 + ["--disaggregation-mode", "decode", "--max-running-requests", "32"])
    cap, role = dec.capacity, dec.capacity.role
    assert (cap.state_slots, cap.max_running_requests) == (32, 32)
    assert cap.state_budget.source is StateSource.RUNNING_REQUESTS
    assert (role.charged_state_slots, role.allocated_state_slots) == (33, 97)
    assert role.unbudgeted_state_bytes == 64 * SLOT == 9_447_669_760
    # T charged K + 1: floor((REST − 33·S) / 7,260) to pages of 64; corrected: 97·S charged
    assert cap.max_total_tokens == (REST - 33 * SLOT) // 7260 // 64 * 64 == 14_104_384
    assert role.corrected_tokens == (REST - 97 * SLOT) // 7260 // 64 * 64 == 12_803_008
    # DecodeReqToTokenPool: size + pre_alloc_size + 1 rows of req_to_token
    assert cap.side.rows[-1].count == role.allocated_request_rows == 97
    assert dec.totals.state_pool_bytes == 97 * SLOT  # HBM as allocated, not as charged


def test_decode_with_user_extra_slots_and_no_state():
    dense = plan(["--disaggregation-mode", "decode", "--max-running-requests", "8",
                  "--disaggregation-decode-extra-slots", "5"], model="llama-3.1-8b")
    assert dense.capacity.role.allocated_state_slots == 0
    assert dense.capacity.side.rows[-1].count == 8 + 5 + 1


def test_decode_refusals():
    with pytest.raises(DeploymentError, match="incompatible with speculative decoding"):
        plan(FP8 + MTP + ["--disaggregation-mode", "decode",
                          "--disaggregation-decode-enable-radix-cache"])
    # 0.5.23 dropped the check
    ok = plan(FP8 + MTP + ["--disaggregation-mode", "decode",
                           "--disaggregation-decode-enable-radix-cache"], rules="sglang-0.5.23")
    assert not ok.deployment.disable_radix_cache
    with pytest.raises(DeploymentError, match="decode-side KV offload"):
        plan(FP8 + ["--disaggregation-mode", "decode", "--enable-hierarchical-cache"])
    with pytest.raises(DeploymentError, match="no effect without --disaggregation-mode decode"):
        plan(["--disaggregation-decode-enable-radix-cache"])


def test_role_memory_fractions():
    # H200 143,771 MiB, tp 8 (max_bs 512). Aggregated: 512 + 8,192·1.5 + 1,024 + 512·2 + 464
    # (breakable prefill graphs, 58 sizes × 8 MiB: kvledger.sglang.cudagraphs) = 15,312.
    agg = auto_mem_fraction_static(143_771, tp=8)
    # Prefill: no decode graphs → 14,288. Decode: max(64·1, 2,048)·1.5 and no prefill graphs
    # (reserve_for_graph_mb skips them on a decode server) → 5,632, floored 10,240.
    pre = auto_mem_fraction_static(143_771, tp=8, role=DisaggMode.PREFILL)
    dec = auto_mem_fraction_static(143_771, tp=8, role=DisaggMode.DECODE, max_running_requests=64,
                                   vit=(24, 1024))
    assert (agg.reserved_mib, pre.reserved_mib, dec.reserved_mib) == (15_312, 14_288, 10_240)
    assert (agg.fraction, pre.fraction, dec.fraction) == (0.893, 0.901, 0.929)
    assert (agg.prefill_graph_mib, pre.prefill_graph_mib, dec.prefill_graph_mib) == (464, 464, 0)
    assert dec.vit_factor == 1.0  # is_vlm excludes the decode role
    big = auto_mem_fraction_static(143_771, tp=8, role=DisaggMode.DECODE,
                                   max_running_requests=4096, draft_tokens=4)
    assert big.reserved_mib == 512 + 4096 * 4 * 1.5 + 1024 + 1024


def test_prefill_verify_scratch_is_a_rule_field():
    # 0.5.21: charged by _handle_max_mamba_cache (joint solve), never allocated by
    # _build_hybrid_req_pool on a prefill server; 0.5.23 skips both.
    old = plan(FP8 + MTP + ["--disaggregation-mode", "prefill"])
    new = plan(FP8 + MTP + ["--disaggregation-mode", "prefill"], rules="sglang-0.5.23")
    agg = plan(FP8 + MTP)
    assert (old.capacity.state_slots, old.capacity.verify_bytes) == (
        agg.capacity.state_slots, agg.capacity.verify_bytes) == (188, SLOT * 38 * 4)
    assert old.capacity.role.allocated_verify_rows == 0 and old.totals.verify_bytes == 0
    assert old.capacity.role.unbudgeted_verify_bytes == -SLOT * 38 * 4 == -22_438_215_680
    # K = floor(B / S) − 1 with B = REST · 0.9 / 1.9, as without speculative decoding
    assert new.capacity.state_slots == int(REST * 0.9 / 1.9 // SLOT) - 1 == 343
    assert new.capacity.verify_bytes == 0 and not new.capacity.role.differs
    assert new.capacity.max_running_requests == 48


def test_role_in_json_and_header():
    doc = plan(FP8 + ["--disaggregation-mode", "decode", "--max-running-requests", "32"]).to_json()
    assert doc["role"] == "decode" and doc["deployment"]["disaggregation_mode"] == "decode"
    assert doc["role_pools"]["allocated_state_slots"] == 97
    assert doc["role_pools"]["unbudgeted_bytes"] == 9_447_669_760
    assert plan(FP8).to_json()["role_pools"] is None


def test_release_0_5_23_caps_the_graph_batch_at_the_request_limit():
    # memory_hook.handle_gpu_memory_settings (0.5.23 only): max_bs = min(256, 64) on an H100
    # (81,559 MiB, tp 1): reserved 512 + 8,192·1.5 + 128 + 64·2 + 464 = 13,520 (0.5.21: 13,904).
    old = auto_mem_fraction_static(81_559, tp=1, max_running_requests=64)
    new = auto_mem_fraction_static(81_559, tp=1, max_running_requests=64,
                                   cap_max_bs_by_requests=True)
    assert (old.cuda_graph_max_bs, new.cuda_graph_max_bs) == (256, 64)
    assert (old.reserved_mib, new.reserved_mib) == (13_904, 13_520)
    assert (old.fraction, new.fraction) == (0.83, 0.834)
    flags = ["--max-running-requests", "64"]
    assert plan(flags, model="llama-3.1-8b", gpu="H100").capacity.memory.mem_fraction_static == 0.83
    assert plan(flags, rules="sglang-0.5.23", model="llama-3.1-8b",
                gpu="H100").capacity.memory.mem_fraction_static == 0.834


def test_device_pools_ledger_is_the_allocation():
    dec = plan(FP8 + ["--disaggregation-mode", "decode", "--max-running-requests", "32"])
    state = next(r for r in dec.pools.rows if r.component == "state pool")
    assert (state.count, state.unit_bytes) == (97, SLOT)
    pre = plan(FP8 + MTP + ["--disaggregation-mode", "prefill"])
    assert [r.component for r in pre.pools.rows] == ["token pool", "state pool"]  # no verify


def test_the_local_role_s_dsa_backend_sets_the_row_layout():
    # calculate_mla_kv_cache_dim: decode reads dsa_decode_backend, prefill dsa_prefill_backend,
    # an aggregated server trtllm on either side. GLM-5.3-Flash: 11 full layers, index key 132 B.
    pair = FP8 + ["--dsa-prefill-backend", "trtllm", "--dsa-decode-backend", "flashmla_sparse"]
    rows = {mode: plan(pair + ["--disaggregation-mode", mode]).ledgers.token.total_bytes
            for mode in ("null", "prefill", "decode")}
    assert rows == {"null": 11 * (512 + 132), "prefill": 11 * (512 + 132),
                    "decode": 11 * (528 + 132)}
