"""DeepSeek-V3 (MLA), DeepSeek-V3.2 (DSA) and GLM-5.2 (DSA with shared indexers) golden plans."""

from __future__ import annotations

import pytest

from kvledger.model.arch import AttnKind, Family, IndexerShape, ModelError
from kvledger.model.config import load_model
from kvledger.model.quant import QuantMethod


def test_deepseek_v3_golden():
    arch = load_model("deepseek-v3")
    assert (arch.family, arch.attn) == (Family.DEEPSEEK_V3, AttnKind.MLA)
    assert (arch.num_layers, arch.num_full_layers, arch.num_linear_layers) == (61, 61, 0)
    assert arch.state is None and arch.indexer is None and not arch.is_hybrid
    assert (arch.mla.kv_lora_rank, arch.mla.qk_rope_head_dim) == (512, 64)  # 576-wide row
    assert arch.num_draft_layers == 1
    # YaRN factor 40 is not applied: rope_scaling states original_max_position_embeddings.
    assert arch.max_context_tokens == 163_840
    assert arch.weight_bytes_per_param == 1.0


def test_deepseek_v32_golden():
    arch = load_model("deepseek-v3.2")
    assert (arch.family, arch.attn) == (Family.DEEPSEEK_V32, AttnKind.DSA)
    assert arch.num_full_layers == arch.num_indexer_layers == 61  # no index_topk_freq: all own one
    assert (arch.mla.kv_lora_rank, arch.mla.qk_rope_head_dim) == (512, 64)
    assert arch.indexer == IndexerShape(head_dim=128, n_heads=64, topk=2048, kpool=1)


def test_glm52_golden():
    arch = load_model("glm-5.2")
    assert (arch.family, arch.attn) == (Family.GLM_MOE_DSA, AttnKind.DSA)
    assert (arch.num_layers, arch.num_full_layers) == (78, 78)
    # indexer_types: "full" at 0, 1, 2, then every 4th from 6 — what index_topk_freq 4 with
    # index_skip_topk_offset 3 gives: max(i − 3 + 1, 0) % 4 == 0.
    owners = [layer.index for layer in arch.layers if layer.has_indexer]
    assert owners == [0, 1, 2, *range(6, 78, 4)]
    assert len(owners) == 21
    assert (arch.mla.kv_lora_rank, arch.mla.qk_rope_head_dim) == (512, 64)
    assert (arch.indexer.n_heads, arch.indexer.kpool) == (32, 1)
    assert arch.max_context_tokens == 1_048_576
    assert arch.weight_bytes_per_param == 2.0  # no quantization_config


def test_freq_alone_derives_the_shared_layers(load_dict, embedded):
    data = embedded("glm-5.2")
    del data["indexer_types"]
    assert load_dict(data).layers == load_model("glm-5.2").layers


def test_pattern_string(load_dict, embedded):
    data = embedded("deepseek-v3.2")
    data["index_topk_pattern"] = "FS" * 30 + "F"
    arch = load_dict(data)
    assert [layer.index for layer in arch.layers if layer.has_indexer] == list(range(0, 61, 2))


def test_indexer_types_disagreeing_with_freq(load_dict, embedded):
    data = embedded("glm-5.2")
    data["indexer_types"][5] = "full"
    with pytest.raises(
        ModelError,
        match=r"'indexer_types' says layer 5 is full but index_topk_freq makes it shared",
    ):
        load_dict(data)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        (
            "indexer_types",
            ["full"] * 77,
            r"'indexer_types' has 77 entries \(expected num_hidden_layers=78\)",
        ),
        ("index_topk_pattern", "FSX", r"'index_topk_pattern' is 'FSX' \(expected 78 characters"),
        (
            "index_skip_topk_offset",
            0,
            r"'index_skip_topk_offset' is 0 \(expected an integer >= 1\)",
        ),
    ],
)
def test_bad_indexer_fields(load_dict, embedded, field, value, message):
    data = embedded("glm-5.2")
    if field != "indexer_types":
        del data["indexer_types"]
    data[field] = value
    with pytest.raises(ModelError, match=message):
        load_dict(data)


def test_unknown_quantization(load_dict, embedded):
    data = embedded("deepseek-v3")
    data["quantization_config"]["quant_method"] = "bitsandbytes"
    with pytest.raises(
        ModelError,
        match=r"'quantization_config\.quant_method' is 'bitsandbytes' \(expected one of fp8, "
              r"mxfp4, modelopt_fp4, awq, gptq",
    ):
        load_dict(data)


@pytest.mark.parametrize("method, algo, expected", [
    ("awq", None, QuantMethod.AWQ), ("gptq", None, QuantMethod.GPTQ),
    ("mxfp4", None, QuantMethod.MXFP4), ("modelopt", "NVFP4", QuantMethod.NVFP4),
    ("modelopt", "FP8", QuantMethod.FP8),
])
def test_quantization_methods_from_the_config(load_dict, embedded, method, algo, expected):
    data = embedded("deepseek-v3")
    data["quantization_config"] = {"quant_method": method} | ({"quant_algo": algo} if algo else {})
    assert load_dict(data).quant is expected
