"""GLM-5.3-Flash golden plan (SPEC §1–3) and glm5_next's consistency checks."""

from __future__ import annotations

import pytest

from kvledger.model.arch import (
    AttnKind,
    Family,
    IndexerShape,
    LayerKind,
    LinearKind,
    ModelError,
)
from kvledger.model.config import load_model


def test_glm53_flash_golden():
    arch = load_model("glm-5.3-flash")
    assert (arch.family, arch.attn, arch.model_type) == (
        Family.GLM5_NEXT,
        AttnKind.DSA,
        "glm5_next",
    )
    # SPEC §1: 45 layers, DSA every 4th from 3 (0-based), the last layer (44) is KDA.
    full = [layer.index for layer in arch.full_layers]
    assert full == list(range(3, 45, 4)) == [3, 7, 11, 15, 19, 23, 27, 31, 35, 39, 43]
    assert (arch.num_layers, arch.num_full_layers, arch.num_linear_layers) == (45, 11, 34)
    assert arch.linear_layers[-1].index == 44
    assert [layer.index for layer in arch.layers if layer.has_indexer] == full
    # NoPE MLA: one 512-element latent row, no RoPE part.
    assert (arch.mla.kv_lora_rank, arch.mla.qk_rope_head_dim) == (512, 0)
    assert arch.indexer == IndexerShape(head_dim=128, n_heads=32, topk=2048, kpool=4)
    state = arch.state
    assert state.kind is LinearKind.KDA and state.ssm_dtype_default is None
    # conv: (K−1, 3 convs × 64 heads × 128) = (3, 24576); temporal: (64, 128, 128)  (SPEC §3)
    assert state.conv_shape(attn_tp=1) == (3, 3 * 64 * 128) == (3, 24576)
    assert state.temporal_shape(attn_tp=1) == (64, 128, 128)
    # attn_tp 8: 24576 / 8 = 3072 channels, 64 / 8 = 8 heads
    assert state.conv_shape(attn_tp=8) == (3, 3072)
    assert state.temporal_shape(attn_tp=8) == (8, 128, 128)
    assert arch.num_draft_layers == 1 and arch.is_multimodal
    assert arch.max_context_tokens == 1_048_576
    assert arch.weight_bytes_per_param == 1.0  # fp8 quantization_config


def test_layer_types_and_kda_layers_must_agree(load_dict, embedded):
    data = embedded("glm-5.3-flash")
    data["text_config"]["layer_types"][3] = "linear_attention"
    with pytest.raises(
        ModelError,
        match=r"'text_config\.linear_attn_config\.kda_layers' lacks layer 3, which layer_types calls linear",
    ):
        load_dict(data)


def test_layer_types_length(load_dict, embedded):
    data = embedded("glm-5.3-flash")
    data["text_config"]["layer_types"].pop()
    with pytest.raises(
        ModelError,
        match=r"'text_config\.layer_types' has 44 entries \(expected num_hidden_layers=45\)",
    ):
        load_dict(data)


def test_unknown_layer_type(load_dict, embedded):
    data = embedded("glm-5.3-flash")
    data["text_config"]["layer_types"][0] = "sliding_attention"
    with pytest.raises(ModelError, match=r"'text_config\.layer_types\[0\]' is 'sliding_attention'"):
        load_dict(data)


def test_shared_indexer_layer_loses_its_indexer(load_dict, embedded):
    data = embedded("glm-5.3-flash")
    data["text_config"]["indexer_types"][7] = "shared"
    arch = load_dict(data)
    owners = [layer.index for layer in arch.layers if layer.has_indexer]
    assert owners == [i for i in range(3, 45, 4) if i != 7]
    layer7 = arch.layers[7]
    assert (layer7.index, layer7.kind, layer7.has_indexer) == (7, LayerKind.FULL, False)
