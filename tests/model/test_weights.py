"""Weight estimates per embedded config: exact where derived by hand, banded against the
published sizes otherwise, and the bytes per parameter from quantization_config."""

from __future__ import annotations

import pytest

from kvledger.model import weights
from kvledger.model.config import load_model


def test_llama31_8b_exact():
    embed = 128256 * 4096 * 2  # embedding + untied lm_head
    attn = 4096 * 32 * 128 * 2 + 2 * 4096 * 8 * 128  # q + o, k + v
    mlp = 3 * 4096 * 14336  # gate, up, down
    arch = load_model("llama-3.1-8b")
    assert arch.num_params == embed + 32 * (attn + mlp) == 8_029_995_008
    # published 8.03 B: the 266 k norm weights we leave out are the difference
    assert arch.weight_bytes == 2 * 8_029_995_008


def test_qwen3_32b_exact():
    embed = 151936 * 5120 * 2
    attn = 5120 * 64 * 128 * 2 + 2 * 5120 * 8 * 128  # head_dim 128, 64 q heads, 8 kv heads
    mlp = 3 * 5120 * 25600
    assert load_model("qwen3-32b").num_params == embed + 64 * (attn + mlp) == 32_761_446_400


def test_falcon_h1_exact():
    attn = 1024 * 8 * 64 * 2 + 2 * 1024 * 2 * 64
    # in_proj: z 1536 + xBC (1536 + 2·1·128 = 1792) + dt 24; conv 1792 × 4; out_proj 1536 × 1024
    mamba = 1024 * (1536 + 1792 + 24) + 1792 * 4 + 1536 * 1024
    mlp = 3 * 1024 * 2048
    embed = 32784 * 1024 * 2
    assert (
        load_model("falcon-h1-0.5b").num_params == embed + 36 * (attn + mamba + mlp) == 521_269_248
    )


def test_deepseek_v3_exact():
    # MLA: q_a 7168×1536, q_b 1536×128×(128+64), kv_a 7168×(512+64), kv_b 512×128×(128+128), o
    mla = 7168 * 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 * 128 * 256 + 128 * 128 * 7168
    dense = 3 * 7168 * 18432  # first_k_dense_replace = 3 layers
    expert = 3 * 7168 * 2048
    moe = 256 * expert + 1 * expert + 7168 * 256  # routed, shared, router
    embed = 129280 * 7168 * 2
    total = embed + 61 * mla + 3 * dense + 58 * moe
    arch = load_model("deepseek-v3")
    assert arch.num_params == total == 671_025_397_760  # published: 671 B without the MTP layer
    assert arch.weight_bytes == total  # fp8: 1 B per parameter


def test_nemotron_h_exact():
    # Mamba2: in_proj 8192 × (z 16384 + xBC 20480 + dt 256), conv 20480 × 4, out 16384 × 8192
    mamba = 8192 * (16384 + 20480 + 256) + 20480 * 4 + 16384 * 8192
    attn = 8192 * 64 * 128 * 2 + 2 * 8192 * 8 * 128
    mlp = 2 * 8192 * 32768  # relu², no gate
    embed = 131072 * 8192 * 2
    total = embed + 54 * mamba + 10 * attn + 54 * mlp
    assert load_model("nemotron-h-56b-base-8k").num_params == total == 56_321_343_488


@pytest.mark.parametrize(
    ("name", "published_params", "tolerance"),
    [
        ("qwen3-next-80b-a3b-instruct", 80e9, 0.01),
        ("qwen3.5-35b-a3b", 35e9, 0.01),  # includes the vision tower
        ("kimi-linear-48b-a3b-instruct", 48e9, 0.03),
        ("glm-5.2", 744e9, 0.01),  # GLM-5's published total
        # GLM-5.3-Flash "320B-A18B" counts its MTP layer (≈7.3 B of experts), which we leave out
        ("glm-5.3-flash", 320e9 - 7.3e9, 0.01),
        # V3.2 = V3 + one indexer per layer: 61 × (1536·64·128 + 7168·128 + 7168·64)
        ("deepseek-v3.2", 671_025_397_760 + 61 * (1536 * 64 * 128 + 7168 * 128 + 7168 * 64), 0.0),
    ],
)
def test_estimates_match_published_sizes(name, published_params, tolerance):
    num_params = load_model(name).num_params
    assert abs(num_params - published_params) <= tolerance * published_params


@pytest.mark.parametrize(
    ("name", "bytes_per_param"),
    [("glm-5.3-flash", 1.0), ("deepseek-v3.2", 1.0), ("glm-5.2", 2.0), ("qwen3.5-35b-a3b", 2.0)],
)
def test_bytes_per_param(name, bytes_per_param):
    arch = load_model(name)
    assert arch.weight_bytes_per_param == bytes_per_param
    assert arch.weight_bytes == int(arch.num_params * bytes_per_param)


def test_moe_counts_shared_experts_and_router():
    # 2 experts of 3·8·4 = 96, one shared of 3·8·6 = 144, router 8 × 2
    assert weights.moe(hidden=8, num_experts=2, expert_intermediate=4, shared_intermediate=6) == (
        2 * 96 + 144 + 16
    )
