"""Every number of the article (seed/000_018f5bef8f9c9eb5.txt), reproduced from the config.

Each test quotes the sentence it checks. Deployment unless stated: single rank, attn_tp 1,
scaled fp8 KV, fp32 temporal state, extra_buffer + overlap (the article's defaults).
"""

from __future__ import annotations

from factories import glm_layout
from kvledger.core.units import GB, MB, GiB, MiB
from kvledger.sglang.capacity import MemoryInput, check_workload, plan_capacity
from kvledger.sglang.deploy import DsaBackend, KVDtype, StateDtype
from kvledger.sglang.ledger import request_ledger, side_ledger, state_ledger, token_ledger

CONTEXT_128K = 131_072


def rows(ledger):
    return {row.component: row for row in (*ledger.rows, *ledger.memo)}


def test_bf16_kv_11264():
    # 图 2 / §1 table: "bf16 … 512 × 2 B × 11 层 = 11,264 B/token"
    kv = rows(token_ledger(glm_layout(kv_cache_dtype=KVDtype.BF16)))["full-layer latent KV"]
    assert (kv.unit_bytes, kv.count, kv.total_bytes) == (1024, 11, 11_264)


def test_scaled_fp8_kv_5808():
    # 图 2: "scaled FP8 的 7.26 KB 由 KV 5,808 B …" (528 B × 11 layers)
    kv = rows(token_ledger(glm_layout()))["full-layer latent KV"]
    assert (kv.unit_bytes, kv.total_bytes) == (528, 5_808)


def test_raw_fp8_kv_5632():
    # 图 2: "TRT-LLM raw layout 的 KV 是 5,632 B"
    kv = rows(token_ledger(glm_layout(dsa_backend=DsaBackend.TRTLLM)))["full-layer latent KV"]
    assert (kv.unit_bytes, kv.total_bytes) == (512, 5_632)


def test_indexer_1452():
    # 图 2: "… indexer 1,452 B 组成" (132 B × 11 layers), the same for bf16 KV
    for dtype in (KVDtype.FP8_E4M3, KVDtype.BF16):
        idx = rows(token_ledger(glm_layout(kv_cache_dtype=dtype)))["full-layer indexer key (reserved)"]
        assert (idx.unit_bytes, idx.total_bytes) == (132, 1_452)


def test_total_scaled_7260_raw_7084_bf16_12716():
    # 图 2: "scaled FP8 的 7.26 KB"; SPEC §2 totals: raw 7,084, bf16 12,716
    assert token_ledger(glm_layout()).total_bytes == 7_260
    assert token_ledger(glm_layout(dsa_backend=DsaBackend.TRTLLM)).total_bytes == 7_084
    assert token_ledger(glm_layout(kv_cache_dtype=KVDtype.BF16)).total_bytes == 12_716


def test_effective_indexer_363():
    # 图 2: "这是按 64-token page 预留的容量账，不是实际 pooled 写入量" — one 132 B key per
    # 4 tokens is written: 33 B/token/layer, 363 B/token over 11 layers.
    idx = rows(token_ledger(glm_layout()))["full-layer indexer key (written)"]
    assert (idx.unit_bytes, idx.total_bytes) == (33, 363)


def test_conv_147456_temporal_4194304_layer_4341760():
    # §2.2: "conv = 3 × 24,576 × 2 B = 147,456 B; temporal = 64 × 128 × 128 × 4 B = 4,194,304 B;
    # 每层 = 4,341,760 B"
    spec = glm_layout().state
    assert spec.conv_shape == (3, 24_576) and spec.temporal_shape == (64, 128, 128)
    assert (spec.conv_bytes, spec.temporal_bytes, spec.bytes_per_layer) == (
        147_456, 4_194_304, 4_341_760)


def test_slot_147619840_fp32_and_76316672_bf16():
    # §2.2: "34 层 = 147,619,840 B ≈ 147.6 MB/state slot"; "显式 bf16 时 … 76,316,672 B"
    assert state_ledger(glm_layout()).total_bytes == 147_619_840
    bf16 = glm_layout(mamba_ssm_dtype=StateDtype.BFLOAT16)
    assert state_ledger(bf16).total_bytes == 76_316_672


def test_request_738mb_and_382mb():
    # §2.2: "默认配置下每 request 的 KDA 预算是 5 × 147.6 ≈ 738 MB；显式 bf16 时约 5 × 76.3 ≈ 382 MB"
    fp32 = request_ledger(glm_layout()).total_bytes
    bf16 = request_ledger(glm_layout(mamba_ssm_dtype=StateDtype.BFLOAT16)).total_bytes
    assert fp32 == 5 * 147_619_840 and round(fp32 / MB) == 738
    assert bf16 == 5 * 76_316_672 and round(bf16 / MB) == 382


def test_slots_per_request_rule():
    # §2.2: "base 3 + overlap 2 = 5 …; --disable-overlap-schedule 时是 4"
    assert glm_layout().slots_per_request == 5
    assert glm_layout(disable_overlap_schedule=True).slots_per_request == 4
    assert glm_layout(disable_radix_cache=True).slots_per_request == 1


def test_compress_tail_1486848():
    # §2.3: "66 × 4 × 128 × 2 B × 2 份 × 11 层 ≈ 1.42 MiB/rank" (64 requests per worker)
    tail = rows(side_ledger(glm_layout(), max_running_requests=64))["compress tail (key + score)"]
    assert tail.total_bytes == 1_486_848 and f"{tail.total_bytes / MiB:.2f}" == "1.42"


def test_compress_tail_dp8_0215_mib():
    # §2.3: "DP8、全局 max_running_requests=64 时，每 worker 约 8 个请求，tail 约 10 行，约 0.215 MiB/rank"
    lay = glm_layout(tp_size=8, dp_size=8, enable_dp_attention=True, max_running_requests=64)
    plan = plan_capacity(lay, MemoryInput.available(100 * GiB))
    assert plan.max_running_requests == 8
    tail = rows(plan.side)["compress tail (key + score)"]
    assert tail.total_bytes == 10 * 4 * 128 * 2 * 2 * 11 == 225_280
    assert f"{tail.total_bytes / MiB:.3f}" == "0.215"


def _scenario(**deploy):
    lay = glm_layout(**deploy)
    plan = plan_capacity(lay, MemoryInput.available(100 * GiB))
    return {r.ledger: r for r in check_workload(plan, 64, CONTEXT_128K).rows}


def test_scenario_token_ledger_single_rank_and_dp8():
    # SPEC §5 seed scenario: "7,260·131,072 ≈ 0.95 GB per request, 60.9 GB total (7.6 GB/rank at DP8)"
    per_request = token_ledger(glm_layout()).total_bytes * CONTEXT_128K
    assert f"{per_request / GB:.2f}" == "0.95"
    assert f"{_scenario()['token KV'].need_bytes / GB:.1f}" == "60.9"
    dp8 = _scenario(tp_size=8, dp_size=8, enable_dp_attention=True)
    assert f"{dp8['token KV'].need_bytes / GB:.1f}" == "7.6"


def test_scenario_state_ledger():
    # SPEC §5: "state ledger 47.2 GB (bf16 flag 24.4 GB; DP8 5.9 / 3.1 GB per rank)"
    dp8 = {"tp_size": 8, "dp_size": 8, "enable_dp_attention": True}
    bf16 = {"mamba_ssm_dtype": StateDtype.BFLOAT16}
    assert f"{_scenario()['state slots'].need_bytes / GB:.1f}" == "47.2"
    assert f"{_scenario(**bf16)['state slots'].need_bytes / GB:.1f}" == "24.4"
    assert f"{_scenario(**dp8)['state slots'].need_bytes / GB:.1f}" == "5.9"
    assert f"{_scenario(**dp8, **bf16)['state slots'].need_bytes / GB:.1f}" == "3.1"
