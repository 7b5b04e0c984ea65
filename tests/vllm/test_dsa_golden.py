"""Sparse MLA (DSA) under vLLM: DeepSeek-V3.2, GLM-5.2 and GLM-5.3-Flash (KDA + DSA).

Every number is derived by hand from vLLM's source:
- latent row: MLAAttentionSpec.real_page_size_bytes (vllm/v1/kv_cache_interface.py): block ×
  (kv_lora_rank + rope) × itemsize, or block × 656 with cache_dtype_str "fp8_ds_mla", which
  DeepseekV32ForCausalLM.verify_and_update_config (model_executor/models/config.py) sets for any
  fp8 --kv-cache-dtype;
- indexer row: Indexer.__init__ / DeepseekV32IndexerCache.get_kv_cache_spec
  (model_executor/models/deepseek_v2.py): MLAAttentionSpec(head_size = 128 + 128 // 128 × 4,
  uint8) = 132 B per stored state;
- block: 64 (every sparse backend's common kernel block, `_preferred_block_size_for_backends`),
  or a --block-size some sparse backend takes (update_block_size_for_backend keeps it,
  supports_block_size picks the backend by it); hybrids then go
  through Platform._align_hybrid_block_size with the latent bytes per token only (of a plain
  MLAAttentionSpec: an fp8_ds_mla row counts 512 B there, not 656);
- groups: get_kv_cache_groups → UniformTypeKVCacheSpecs (one group of latent + indexer
  layers) and, for GLM-5.3-Flash, _get_packed_kv_cache_groups (v1/core/kv_cache_planning.py):
  the state layers split until a group fits the latent + indexer block (cdiv(34, 11) = 4
  groups where the state page is the latent page), the kpool tail a group of its own, in
  layer order (layer 0 is KDA: the state groups first);
- bytes per block: _get_kv_cache_bytes_per_block / get_kv_cache_config_from_groups, the
  widest group's pages, Σ latent pages + Σ indexer pages (state and tail groups alias them);
- blocks per request: _max_memory_usage_bytes_from_groups: cdiv(max_model_len, block) for the
  attention group + (2 + spec) per state group in align mode + 1 for the tail.
"""

from __future__ import annotations

import pytest

from kvledger.core.errors import DeploymentError
from kvledger.core.gpus import get_gpu
from kvledger.core.units import GiB
from kvledger.model.config import load_model
from kvledger.vllm.deploy import VllmDeployment
from kvledger.vllm.layout import vllm_layout
from kvledger.vllm.plan import make_vllm_plan
from kvledger.vllm.rules import RULES, MambaCacheMode

R13, R33 = RULES["vllm-0.13"], RULES["vllm-0.33"]
H200 = get_gpu("h200")


def lay(name, rules=R33, tp=1, **kw):
    return vllm_layout(load_model(name), VllmDeployment(tensor_parallel_size=tp, **kw), rules,
                       H200)


def test_deepseek_v32_bf16_one_group_of_mixed_pages():
    lo = lay("deepseek-v3.2")
    assert lo.block_tokens == 64  # FlashMLASparse
    assert lo.attention.bytes_per_token == (512 + 64) * 2 == 1152
    assert lo.page_bytes == 64 * 1152 == 73_728
    assert lo.indexer.row_bytes == 132 and lo.indexer.page_bytes == 64 * 132 == 8_448
    assert [(g.kind, g.num_layers) for g in lo.groups] == [("attention", 61)]
    assert lo.bytes_per_block == 61 * (73_728 + 8_448) == 5_012_736
    assert lo.blocks_per_request() == 163_840 // 64 == 2_560


def test_deepseek_v32_fp8_is_the_656_byte_row():
    lo = lay("deepseek-v3.2", kv_cache_dtype="fp8")
    assert lo.attention.fp8_ds_mla and lo.attention.bytes_per_token == 656
    assert lo.bytes_per_block == 61 * (64 * 656 + 64 * 132) == 3_076_352


def test_deepseek_v32_capacity_from_the_logged_memory():
    p = make_vllm_plan("deepseek-v3.2", rules="vllm-0.33", available_gib=40)
    cap = p.capacity
    assert cap.num_blocks == 40 * GiB // 5_012_736 == 8_568
    assert cap.logged_tokens == int(8_568 / 2_560 * 163_840) == 548_352
    rows = {r.component: r.total_bytes for r in p.ledgers.per_block.rows}
    assert rows == {"layer page": 61 * 73_728, "indexer page": 61 * 8_448}
    assert p.ledgers.per_block.total_bytes == 5_012_736


def test_sparse_mla_keeps_a_block_size_a_sparse_backend_takes():
    # vLLM 0.33.0's planning on a pretended H200 (tests/data/oracle/vllm-0.33.0-block-size.jsonl,
    # deepseek-v3.2|H200|auto|bs=128|tp=8): block 128, FLASH_ATTN_MLA_SPARSE, 10,025,472 B
    lo = lay("deepseek-v3.2", tp=8, block_size=128)
    assert lo.block_tokens == 128 and lo.page_bytes == 128 * 1152 == 147_456
    assert lo.bytes_per_block == 61 * (147_456 + 128 * 132) == 10_025_472
    assert lo.blocks_per_request() == 163_840 // 128 == 1_280
    # …and on a pretended B200, FLASHINFER_MLA_SPARSE's MultipleOf(32) takes 32: 2,506,368 B
    b200 = vllm_layout(load_model("deepseek-v3.2"),
                       VllmDeployment(tensor_parallel_size=8, block_size=32), R33,
                       get_gpu("b200"))
    assert b200.block_tokens == 32 and b200.bytes_per_block == 61 * 32 * (1152 + 132) == 2_506_368


def test_sparse_mla_refuses_a_block_size_no_sparse_backend_takes():
    # vLLM 0.33.0 and 0.24.0 on H200 with --block-size 16 or 32: "No valid attention backend
    # found" (every SM90 sparse backend is MultipleOf(64)); B200 refuses 16 only
    for block in (16, 32):
        with pytest.raises(DeploymentError, match="No valid attention backend"):
            lay("deepseek-v3.2", tp=8, block_size=block)
    with pytest.raises(DeploymentError, match="multiples of 32"):
        vllm_layout(load_model("deepseek-v3.2"),
                    VllmDeployment(tensor_parallel_size=8, block_size=16), R33, get_gpu("b200"))


def test_older_rule_set_keeps_sparse_mla_at_64_with_a_note():
    lo = lay("deepseek-v3.2", RULES["vllm-0.27"], block_size=128)
    assert lo.block_tokens == 64
    assert any("kept at 64" in n for n in lo.notes)


def test_glm52_shared_layers_carry_no_indexer_cache():
    lo = lay("glm-5.2")
    assert lo.num_indexer_layers == 21  # indexer_types: 21 "full" of 78
    assert lo.bytes_per_block == 78 * 64 * 1152 + 21 * 64 * 132 == 5_928_192
    assert any("21 of 78" in n for n in lo.notes)


def test_glm53_flash_tp4_033_align():
    lo = lay("glm-5.3-flash", tp=4)
    assert lo.mamba_cache_mode is MambaCacheMode.ALIGN
    assert lo.attention.bytes_per_token == 512 * 2  # NoPE latent, bf16
    # KDA state (kda_state_shape / kda_state_dtype): conv 3 × (3·64·128 / 4) bf16 + temporal
    # (64 / 4, 128, 128) float32
    assert lo.mamba.real_page_bytes == 3 * 6144 * 2 + 16 * 128 * 128 * 4 == 1_085_440
    # granule 128 (MLA floor), cdiv(1,085,440, 128 × 1,024) = 9
    assert lo.alignment.granule_tokens == 128 and lo.block_tokens == 1152
    assert lo.page_bytes == 1152 * 1024 == 1_179_648
    assert lo.indexer.page_bytes == 1152 // 4 * 132 == 38_016  # index_kpool 4
    # vLLM 0.33's planning on a pretended H200 lists them so (the recording's H200 rows)
    assert [(g.kind, g.num_layers) for g in lo.groups] == [
        ("mamba", 9), ("mamba", 9), ("mamba", 8), ("mamba", 8), ("attention", 11)]
    assert lo.kpool_tail
    # block-outermost layout: Σ pages raised to lcm(one 1,024 B latent row, FLASHINFER_MLA_
    # SPARSE_SM90's align_blocks_to_rows; the indexer's 128-token page 32 × 132 = 4,224 B):
    # 33,792 B. The term the 11 + 11 pages alone miss; vLLM 0.33 on a pretended H200: 13,415,424
    assert lo.block_stride_alignment_bytes == 33_792
    assert lo.bytes_per_block == -(-(11 * 1_179_648 + 11 * 38_016) // 33_792) * 33_792 \
        == 13_415_424
    # 4 state groups × (2 + 1 FlashKDA prefill checkpoint, Glm5NextLinearAttention.
    # get_kv_cache_spec) + the tail block; vLLM 0.33's planning on a pretended H200: 924
    assert lo.blocks_per_request() == -(-1_048_576 // 1152) + 4 * 3 + 1 == 924


def test_glm53_flash_013_none_mode_block():
    lo = lay("glm-5.3-flash", R13, tp=4)
    assert lo.mamba_cache_mode is MambaCacheMode.NONE
    assert lo.block_tokens == 64 * -(-1_085_440 // (64 * 1024)) == 1088
    assert lo.blocks_per_request() == -(-1_048_576 // 1088) + 4 + 1


def test_glm53_flash_fp8_row_follows_the_backend():
    # A GLM-5.3-Flash deployment (TP 2, 7 speculative tokens, fp8 KV) published a 3,584-token
    # block and a 2,351,104 B (3,584 × 656, fp8_ds_mla) page: FLASHMLA_SPARSE's packed row.
    # vLLM 0.33 on SM90 picks FLASHINFER_MLA_SPARSE_SM90 for a 512-wide latent
    # (_get_backend_priorities), which keeps the raw 512 B fp8 row: block 128 × cdiv(2,342,912,
    # 128 × 512) = 4,608, page 2,359,296; vLLM 0.33's planning on a pretended H200 agrees.
    lo = lay("glm-5.3-flash", tp=2, kv_cache_dtype="fp8", num_speculative_tokens=7)
    assert lo.mamba.shapes == ((10, 12288), (32, 128, 128))
    assert lo.mamba.real_page_bytes == 10 * 12288 * 2 + 32 * 128 * 128 * 4 == 2_342_912
    assert lo.mla_backend.name == "FLASHINFER_MLA_SPARSE_SM90"
    assert lo.block_tokens == 4608 and lo.page_bytes == 4608 * 512 == 2_359_296
    old = lay("glm-5.3-flash", RULES["vllm-0.27"], tp=2, kv_cache_dtype="fp8",
              num_speculative_tokens=7)
    # a rule set without a backend table (vllm-0.27, not checked against its release's
    # backends) stores every fp8 sparse row as fp8_ds_mla, but v0.27.0's
    # _align_hybrid_block_size sizes the block from the plain 512 B row all the same: 4,608
    # tokens of 656 B rows. The published 3,584 (the block a 656 B row would give) is a fork's.
    assert old.block_tokens == 4608 and old.page_bytes == 4608 * 656 == 3_022_848
    assert old.mamba.page_bytes == 4608 * 512 and old.block_stride_alignment_bytes == 1


def test_glm53_flash_lost_bytes_itemise_latent_and_indexer_tails():
    p = make_vllm_plan("glm-5.3-flash", VllmDeployment(tensor_parallel_size=8),
                       rules="vllm-0.33", available_gib=90)
    lo = p.layout
    assert lo.block_tokens == 128 * -(-542_720 // (128 * 1024)) == 640
    tail = -(-1_048_576 // 640) * 640 - 1_048_576
    assert tail == 384
    rows = {r.component: r.total_bytes for r in p.ledgers.lost_per_request.rows}
    assert rows["last attention block, empty tail"] == 384 * 11 * 1024
    assert rows["last indexer block, empty tail"] == 384 // 4 * 11 * 132
    memo = {r.component: r for r in p.ledgers.lost_per_request.memo}
    # FlashMLASparse's 64-token kernel block would leave no tail: 1,048,576 = 16,384 × 64
    assert memo["of which block inflation"].count == 384 * 11
    cap = p.capacity
    assert cap.num_blocks == 90 * GiB // (11 * 640 * 1024 + 11 * 160 * 132) == 12_986
    assert cap.blocks_per_request == 1_639 + 4 * 2 + 1 == 1_648
