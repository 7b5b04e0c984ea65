"""Golden vLLM layouts per family, each number derived by hand from vLLM's formulas.

- bytes per token: FullAttentionSpec.real_page_size_bytes (kv heads × (K + V) head × itemsize)
  and MLAAttentionSpec (1 × (kv_lora_rank + rope) × itemsize), vllm/v1/kv_cache_interface.py;
- state page: MambaSpec.page_size_bytes = Σ prod(shape) × itemsize over the shapes of
  MambaStateShapeCalculator (model_executor/layers/mamba/mamba_utils.py) and the dtypes of
  each model class's get_mamba_state_dtype_from_config;
- block: Platform._align_hybrid_block_size (vllm/platforms/interface.py),
  granule × cdiv(state page, granule × bytes per token);
- groups: _get_kv_cache_groups_uniform_page_size (vllm/v1/core/kv_cache_utils.py);
- blocks per request: get_max_concurrency_for_kv_cache_config, Σ cdiv(max_memory_usage_bytes,
  page) with MambaSpec.max_memory_usage_bytes = page × (1 | 2 + spec).
"""

from __future__ import annotations

import pytest

from kvledger.core.errors import DeploymentError
from kvledger.core.gpus import get_gpu
from kvledger.model.config import load_model
from kvledger.vllm.deploy import VllmDeployment
from kvledger.vllm.layout import vllm_layout
from kvledger.vllm.rules import RULES, MambaCacheMode

R13, R33 = RULES["vllm-0.13"], RULES["vllm-0.33"]
H200 = get_gpu("h200")


def lay(name, rules, tp=1, gpu=H200, **kw):
    return vllm_layout(load_model(name), VllmDeployment(tensor_parallel_size=tp, **kw), rules, gpu)


def test_qwen3_next_tp2_013():
    lo = lay("qwen3-next-80b-a3b-instruct", R13, tp=2)
    assert lo.attention.bytes_per_token == 1 * 2 * 256 * 2  # 2 KV heads / tp 2, K+V, bf16
    conv = 3 * (2 * 16 * 128 + 32 * 128) // 2 * 2  # (K − 1, conv_dim / tp) bf16
    temporal = 32 // 2 * 128 * 128 * 2  # (v_heads / tp, v_dim, k_dim), bf16 (conv dtype)
    assert lo.mamba.real_page_bytes == conv + temporal == 548_864
    assert lo.block_tokens == 16 * -(-548_864 // (16 * 1024)) == 544
    assert lo.page_bytes == 544 * 1024 == 557_056
    assert lo.alignment.mamba_padding_bytes == 8_192  # logged "Padding mamba page size by 1.49%"
    assert f"{lo.alignment.padding_pct:.2f}" == "1.49"
    assert [(g.kind, g.num_layers) for g in lo.groups] == [("attention", 12)] + [("mamba", 12)] * 3
    assert lo.mamba_cache_mode is MambaCacheMode.NONE and not lo.prefix_caching
    assert lo.bytes_per_block == 12 * 557_056
    assert lo.blocks_per_request() == -(-262_144 // 544) + 3 == 485


def test_qwen3_next_tp2_033_align_on_hopper():
    lo = lay("qwen3-next-80b-a3b-instruct", R33, tp=2)
    assert lo.mamba_cache_mode is MambaCacheMode.ALIGN and lo.prefix_caching
    # granule lcm(16, 64): the GDN prefill checkpoint alignment on Hopper
    assert lo.alignment.granule_tokens == 64
    assert lo.block_tokens == 64 * -(-548_864 // (64 * 1024)) == 576
    # align: 2 + 1 prefill checkpoint per group (MambaSpec.max_memory_usage_bytes, 0.33);
    # vLLM 0.33's planning on a pretended H200 (oracle/vllm/sizing.py) gives 465
    assert lo.blocks_per_request() == -(-262_144 // 576) + 3 * 3 == 465
    old = lay("qwen3-next-80b-a3b-instruct", RULES["vllm-0.24"], tp=2,
              enable_prefix_caching=True)
    # v0.24.0 (prefix caching asked for: its hybrid default is off): no checkpoint lcm in
    # _align_hybrid_block_size, 2 blocks per state group
    assert old.block_tokens == 544 and old.blocks_per_request() == -(-262_144 // 544) + 3 * 2


def test_qwen3_next_033_without_gpu_has_no_checkpoint_alignment():
    lo = lay("qwen3-next-80b-a3b-instruct", R33, tp=2, gpu=None)
    assert lo.block_tokens == 544 and any("checkpoint alignment" in n for n in lo.notes)


def test_qwen35_config_pins_fp32_state():
    lo = lay("qwen3.5-35b-a3b", R13)
    assert lo.attention.bytes_per_token == 2 * 2 * 256 * 2
    conv = 3 * (2 * 16 * 128 + 32 * 128) * 2
    temporal = 32 * 128 * 128 * 4  # config mamba_ssm_dtype float32 (Qwen3.5's dtype rule)
    assert lo.mamba.real_page_bytes == conv + temporal == 2_146_304
    assert lo.block_tokens == 16 * -(-2_146_304 // (16 * 2048)) == 1056
    assert [g.num_layers for g in lo.groups] == [10, 10, 10, 10]
    assert lo.blocks_per_request() == -(-262_144 // 1056) + 3 == 252
    lo33 = lay("qwen3.5-35b-a3b", R33)
    assert lo33.block_tokens == 64 * -(-2_146_304 // (64 * 2048)) == 1088
    assert lo33.blocks_per_request() == -(-262_144 // 1088) + 9 == 250  # vLLM 0.33: 250


def test_qwen35_ssm_flag_overrides_config():
    lo = lay("qwen3.5-35b-a3b", R13, mamba_ssm_cache_dtype="bfloat16")
    assert lo.mamba.real_page_bytes == 3 * 8192 * 2 + 32 * 128 * 128 * 2


def test_nemotron_h_tp4_fp32_state_and_seven_groups():
    lo = lay("nemotron-h-56b-base-8k", R13, tp=4)
    assert lo.attention.bytes_per_token == 8 // 4 * 2 * 128 * 2
    conv = 3 * (256 * 64 + 2 * 8 * 256) // 4 * 2  # intermediate + 2·n_groups·d_state, / tp
    temporal = 256 // 4 * 64 * 256 * 4  # Nemotron-H: float32 temporal state by default
    assert lo.mamba.real_page_bytes == conv + temporal == 4_225_024
    assert lo.block_tokens == 16 * -(-4_225_024 // (16 * 1024)) == 4128
    # 10 attention + 54 Mamba layers, group size 10: 54 → 6 groups of 9 (1 padding layer each)
    assert [g.num_layers for g in lo.groups] == [10, 9, 9, 9, 9, 9, 9]
    assert lo.blocks_per_request() == -(-8192 // 4128) + 6 == 8


def test_kimi_linear_mla_and_kda():
    lo = lay("kimi-linear-48b-a3b-instruct", R13)
    assert lo.attention.mla and lo.attention.bytes_per_token == (512 + 64) * 2
    conv = 3 * (32 * 128 * 3) * 2  # kda_state_shape: heads·dim + 2·k_heads·k_dim
    recurrent = 32 * 128 * 128 * 4  # kda_state_dtype: float32 recurrence
    assert lo.mamba.real_page_bytes == conv + recurrent == 2_170_880
    # 0.13 aligns an MLA hybrid's block in 64s (HybridAttentionMambaModelConfig
    # .verify_and_update_config, `kernel_block_alignment_size = … 64`); vllm#28228's boot log
    # agrees (tests/logs/test_real_excerpts.py)
    assert lo.alignment.granule_tokens == 64
    assert lo.block_tokens == 64 * -(-2_170_880 // (64 * 1152)) == 1920
    assert [g.num_layers for g in lo.groups] == [7, 7, 7, 6]  # 20 KDA layers into 3 groups
    assert lo.blocks_per_request() == -(-1_048_576 // 1920) + 3 == 550
    lo33 = lay("kimi-linear-48b-a3b-instruct", R33)
    assert lo33.alignment.granule_tokens == 128  # MLA floor, no GDN alignment for KDA
    assert lo33.block_tokens == 128 * -(-2_170_880 // (128 * 1152)) == 1920
    assert lo33.blocks_per_request() == -(-1_048_576 // 1920) + 6 == 553


def test_falcon_h1_every_layer_in_both_groups():
    lo = lay("falcon-h1-0.5b", R13)
    assert lo.attention.bytes_per_token == 2 * 2 * 64 * 2
    # conv over x (24 heads × 64, the width kvledger's model layer takes) + B + C (1 × 128 each)
    conv = 3 * (24 * 64 + 2 * 128) * 2
    temporal = 24 * 64 * 128 * 2  # mamba2_state_dtype: bf16 without --mamba-ssm-cache-dtype
    assert lo.mamba.real_page_bytes == conv + temporal == 403_968
    assert lo.block_tokens == 16 * -(-403_968 // (16 * 512)) == 800
    assert [(g.kind, g.num_layers) for g in lo.groups] == [("attention", 36), ("mamba", 36)]
    assert lo.blocks_per_request() == -(-16_384 // 800) + 1 == 22


@pytest.mark.parametrize("name,layers,max_len", [("llama-3.1-8b", 32, 131_072),
                                                 ("qwen3-32b", 64, 40_960)])
def test_dense_gqa_one_group_block_16(name, layers, max_len):
    for rules in (R13, R33):
        lo = lay(name, rules)
        assert lo.mamba is None and lo.alignment is None
        assert lo.attention.bytes_per_token == 8 * 2 * 128 * 2
        assert lo.block_tokens == 16 and lo.page_bytes == 16 * 4096
        assert [g.num_layers for g in lo.groups] == [layers]
        assert lo.bytes_per_block == layers * 65_536
        assert lo.blocks_per_request() == max_len // 16


def test_dense_kv_heads_replicate_past_tp_and_fp8_halves():
    lo = lay("llama-3.1-8b", R33, tp=16, kv_cache_dtype="fp8")
    assert lo.attention.bytes_per_token == 1 * 2 * 128 * 1  # max(1, 8 // 16) heads, fp8


def test_user_block_size_becomes_the_granule():
    lo = lay("qwen3-next-80b-a3b-instruct", R13, tp=2, block_size=64)
    assert lo.alignment.granule_tokens == 64 and lo.block_tokens == 576


def test_speculative_tokens_add_conv_rows_and_state_blocks():
    lo = lay("qwen3-next-80b-a3b-instruct", R33, tp=2, num_speculative_tokens=2)
    assert lo.mamba.shapes[0] == (3 + 2, 4096)
    # 2 + 2 speculative + 1 prefill checkpoint; vLLM 0.33's planning (pretended H200): 5
    assert lo.mamba.blocks_per_request == 2 + 2 + 1


def test_013_disables_prefix_caching_on_hybrids_without_support():
    # v0.13.0 MambaModelConfig.verify_and_update_config: a model class without
    # SupportsMambaPrefixCaching logs "…without support for prefix caching: disabling." and
    # starts with prefix caching off: the same layout as without the flag
    asked = lay("qwen3-next-80b-a3b-instruct", R13, tp=2, enable_prefix_caching=True)
    plain = lay("qwen3-next-80b-a3b-instruct", R13, tp=2)
    assert not asked.prefix_caching and asked.mamba_cache_mode is MambaCacheMode.NONE
    assert asked.block_tokens == plain.block_tokens == 544
    assert asked.blocks_per_request() == plain.blocks_per_request() == 485
    assert any("disabling" in n for n in asked.notes)
    # Nemotron-H implements it there: an experimental mode kvledger refuses to guess
    with pytest.raises(DeploymentError, match="experimental Mamba prefix caching"):
        lay("nemotron-h-56b-base-8k", R13, enable_prefix_caching=True)
