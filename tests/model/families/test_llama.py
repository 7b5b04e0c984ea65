"""Llama-3.1-8B and Qwen3-32B golden plans: dense GQA."""

from __future__ import annotations

import pytest

from kvledger.model.arch import AttnKind, Family, ModelError
from kvledger.model.config import load_model


def test_llama31_golden():
    arch = load_model("llama-3.1-8b")
    assert (arch.family, arch.attn) == (Family.LLAMA, AttnKind.GQA)
    assert (arch.num_layers, arch.num_full_layers, arch.num_linear_layers) == (32, 32, 0)
    # no head_dim in the config: 4096 / 32 heads = 128
    assert (arch.gqa.num_kv_heads, arch.gqa.head_dim) == (8, 128)
    assert arch.gqa.kv_heads_per_rank(attn_tp=8) == 1
    # llama3 rope scaling: max_position_embeddings is already the scaled length
    assert arch.max_context_tokens == 131_072


def test_qwen3_golden():
    arch = load_model("qwen3-32b")
    assert (arch.family, arch.attn) == (Family.QWEN3, AttnKind.GQA)
    assert (arch.num_layers, arch.num_full_layers) == (64, 64)
    # head_dim is explicit: 64 heads × 128 = 8192 ≠ hidden 5120
    assert (arch.gqa.num_kv_heads, arch.gqa.head_dim) == (8, 128)
    assert arch.max_context_tokens == 40_960


def test_rope_factor_scales_the_context(load_dict, embedded):
    data = embedded("qwen3-32b")
    data["rope_scaling"] = {"rope_type": "linear", "factor": 4.0}
    assert load_dict(data).max_context_tokens == 4 * 40_960


def test_sliding_window_is_refused(load_dict, embedded):
    data = embedded("qwen3-32b")
    data["use_sliding_window"] = True
    with pytest.raises(ModelError, match=r"'use_sliding_window' is true \(sliding-window"):
        load_dict(data)


def test_hidden_not_divisible_by_heads_needs_head_dim(load_dict, embedded):
    data = embedded("llama-3.1-8b")
    data["num_attention_heads"] = 24
    data["num_key_value_heads"] = 8
    with pytest.raises(
        ModelError, match=r"'hidden_size' is 4096, not a multiple of num_attention_heads=24"
    ):
        load_dict(data)
