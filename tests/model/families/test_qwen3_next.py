"""Qwen3-Next golden plan: GDN state and gated GQA every 4th layer."""

from __future__ import annotations

import pytest

from kvledger.model.arch import AttnKind, Family, LinearKind, ModelError, ShardingError
from kvledger.model.config import load_model


def test_qwen3_next_golden():
    arch = load_model("qwen3-next-80b-a3b-instruct")
    assert (arch.family, arch.attn) == (Family.QWEN3_NEXT, AttnKind.GQA)
    # full_attention_interval 4: layer i is full iff (i + 1) % 4 == 0 (SGLang layers_block_type)
    assert [layer.index for layer in arch.full_layers] == list(range(3, 48, 4))
    assert (arch.num_layers, arch.num_full_layers, arch.num_linear_layers) == (48, 12, 36)
    assert (arch.gqa.num_kv_heads, arch.gqa.head_dim) == (2, 256)
    assert arch.gqa.kv_heads_per_rank(attn_tp=4) == 1  # 2 kv heads replicated over 4 ranks
    state = arch.state
    assert state.kind is LinearKind.GDN and state.ssm_dtype_default is None
    # conv: 2 × 16 k-heads × 128 + 32 v-heads × 128 = 4096 + 4096 = 8192 channels
    assert state.conv_shape(attn_tp=1) == (3, 8192)
    # temporal: (v_heads, v_dim, k_dim) = (32, 128, 128)  (Mamba2StateShape.create order)
    assert state.temporal_shape(attn_tp=1) == (32, 128, 128)
    assert state.conv_shape(attn_tp=2) == (3, 4096)
    assert state.temporal_shape(attn_tp=2) == (16, 128, 128)
    assert arch.max_context_tokens == 262_144
    assert arch.weight_bytes_per_param == 2.0


def test_key_heads_must_divide_by_attn_tp():
    with pytest.raises(ShardingError, match="q: 16 heads are not divisible by attn_tp=32"):
        load_model("qwen3-next-80b-a3b-instruct").state.conv_shape(attn_tp=32)


def test_value_heads_must_be_a_multiple_of_key_heads(load_dict, embedded):
    data = embedded("qwen3-next-80b-a3b-instruct")
    data["linear_num_value_heads"] = 24
    data["linear_num_key_heads"] = 16
    with pytest.raises(
        ModelError,
        match=r"'linear_num_value_heads' is 24 \(expected a multiple of linear_num_key_heads=16\)",
    ):
        load_dict(data)


def test_interval_or_layer_types_required(load_dict, embedded):
    data = embedded("qwen3-next-80b-a3b-instruct")
    del data["full_attention_interval"]
    with pytest.raises(ModelError, match=r"'full_attention_interval' is missing"):
        load_dict(data)


def test_kv_heads_must_divide_query_heads(load_dict, embedded):
    data = embedded("qwen3-next-80b-a3b-instruct")
    data["num_key_value_heads"] = 3
    with pytest.raises(
        ModelError,
        match=r"'num_key_value_heads' is 3 \(expected a divisor of num_attention_heads=16\)",
    ):
        load_dict(data)
