"""Qwen3.5 golden plan: multimodal wrapper, explicit layer_types, pinned fp32 SSM state."""

from __future__ import annotations

import pytest

from kvledger.model.arch import Family, LinearKind, ModelError
from kvledger.model.config import load_model
from kvledger.model.families import ADAPTERS, qwen3_5


def test_qwen35_golden():
    arch = load_model("qwen3.5-35b-a3b")
    assert (arch.family, arch.model_type) == (Family.QWEN3_5, "qwen3_5_moe")
    assert [layer.index for layer in arch.full_layers] == list(range(3, 40, 4))
    assert (arch.num_layers, arch.num_full_layers, arch.num_linear_layers) == (40, 10, 30)
    assert (arch.gqa.num_kv_heads, arch.gqa.head_dim) == (2, 256)
    state = arch.state
    assert state.kind is LinearKind.GDN
    assert state.ssm_dtype_default == "float32"  # text_config.mamba_ssm_dtype
    # same GDN widths as Qwen3-Next: 2 × 16 × 128 + 32 × 128 = 8192
    assert state.conv_shape(attn_tp=1) == (3, 8192)
    assert state.temporal_shape(attn_tp=1) == (32, 128, 128)
    assert arch.is_multimodal and arch.num_draft_layers == 1  # mtp_num_hidden_layers
    assert arch.max_context_tokens == 262_144


def test_every_qwen35_model_type_is_registered():
    assert qwen3_5.MODEL_TYPES == ("qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text")
    assert all(ADAPTERS[t] is qwen3_5.read for t in qwen3_5.MODEL_TYPES)


def test_text_only_checkpoint_reads_the_root(load_dict, embedded):
    text = embedded("qwen3.5-35b-a3b")["text_config"]  # model_type qwen3_5_moe_text
    arch = load_dict(text)
    assert arch.layers == load_model("qwen3.5-35b-a3b").layers
    assert not arch.is_multimodal


def test_layer_types_must_match_the_interval(load_dict, embedded):
    data = embedded("qwen3.5-35b-a3b")
    data["text_config"]["layer_types"][0] = "full_attention"
    with pytest.raises(
        ModelError,
        match=r"'text_config\.layer_types' says layer 0 is full_attention but "
        r"full_attention_interval=4 makes it linear",
    ):
        load_dict(data)


def test_layer_types_alone_decide_without_an_interval(load_dict, embedded):
    data = embedded("qwen3.5-35b-a3b")
    del data["text_config"]["full_attention_interval"]
    data["text_config"]["layer_types"][0] = "full_attention"
    assert [layer.index for layer in load_dict(data).full_layers][:2] == [0, 3]


def test_layer_types_length(load_dict, embedded):
    data = embedded("qwen3.5-35b-a3b")
    data["text_config"]["layer_types"] = data["text_config"]["layer_types"][:39]
    with pytest.raises(
        ModelError,
        match=r"'text_config\.layer_types' has 39 entries \(expected num_hidden_layers=40\)",
    ):
        load_dict(data)


def test_unknown_ssm_dtype(load_dict, embedded):
    data = embedded("qwen3.5-35b-a3b")
    data["text_config"]["mamba_ssm_dtype"] = "fp8"
    with pytest.raises(
        ModelError, match=r"'text_config\.mamba_ssm_dtype' is 'fp8' \(expected one of"
    ):
        load_dict(data)
