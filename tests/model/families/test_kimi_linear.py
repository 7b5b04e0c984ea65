"""Kimi-Linear golden plan: 1-based layer lists, MLA with a RoPE part, KDA state."""

from __future__ import annotations

import pytest

from kvledger.model.arch import AttnKind, Family, LinearKind, ModelError
from kvledger.model.config import load_model


def test_kimi_linear_golden():
    arch = load_model("kimi-linear-48b-a3b-instruct")
    assert (arch.family, arch.attn) == (Family.KIMI_LINEAR, AttnKind.MLA)
    # full_attn_layers [4, 8, …, 24, 27] are 1-based (SGLang: `layer_idx + 1 in kda_layers`),
    # so the 0-based full layers are 3, 7, …, 23, 26.
    assert [layer.index for layer in arch.full_layers] == [3, 7, 11, 15, 19, 23, 26]
    assert (arch.num_layers, arch.num_full_layers, arch.num_linear_layers) == (27, 7, 20)
    assert arch.linear_layers[0].index == 0  # 1-based kda layer 1
    assert arch.num_indexer_layers == 0 and arch.indexer is None
    # MLA row: 512 latent + 64 RoPE (SPEC §3, Kimi-Linear)
    assert (arch.mla.kv_lora_rank, arch.mla.qk_rope_head_dim) == (512, 64)
    state = arch.state
    assert state.kind is LinearKind.KDA
    # conv: (4−1, 3 × 32 heads × 128) = (3, 12288); temporal (32, 128, 128)
    assert state.conv_shape(attn_tp=1) == (3, 12288)
    assert state.temporal_shape(attn_tp=1) == (32, 128, 128)
    assert state.conv_shape(attn_tp=4) == (3, 3072)  # 12288 / 4
    assert arch.max_context_tokens == 1_048_576  # model_max_length; no max_position_embeddings
    assert arch.num_draft_layers == 0 and not arch.is_multimodal


def test_zero_based_lists_give_the_same_plan(load_dict, embedded):
    data = embedded("kimi-linear-48b-a3b-instruct")
    linear = data["linear_attn_config"]
    linear["kda_layers"] = [i - 1 for i in linear["kda_layers"]]
    linear["full_attn_layers"] = [i - 1 for i in linear["full_attn_layers"]]
    arch = load_dict(data)
    assert arch.layers == load_model("kimi-linear-48b-a3b-instruct").layers


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda c: c["kda_layers"].append(4),
            r"'linear_attn_config\.kda_layers' and full_attn_layers both list layers \[4\]",
        ),
        (
            lambda c: c["kda_layers"].append(1),
            r"'linear_attn_config\.kda_layers' lists layers \[1\] more than once",
        ),
        (
            lambda c: c["kda_layers"].remove(13),
            r"'linear_attn_config\.kda_layers' and full_attn_layers together name 26 layers from 1 to 27 "
            r"\(expected num_hidden_layers=27 layers, numbered 0\.\.26 or 1\.\.27\)",
        ),
        (lambda c: c.pop("full_attn_layers"), r"'linear_attn_config\.full_attn_layers' is missing"),
    ],
)
def test_contradictory_layer_lists(load_dict, embedded, edit, message):
    data = embedded("kimi-linear-48b-a3b-instruct")
    edit(data["linear_attn_config"])
    with pytest.raises(ModelError, match=message):
        load_dict(data)
