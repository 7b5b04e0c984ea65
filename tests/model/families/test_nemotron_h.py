"""Nemotron-H-56B golden plan: positions in hybrid_override_pattern, Mamba2 state."""

from __future__ import annotations

import pytest

from kvledger.model.arch import AttnKind, Family, LinearKind, ModelError
from kvledger.model.config import load_model


def test_nemotron_h_golden():
    arch = load_model("nemotron-h-56b-base-8k")
    assert (arch.family, arch.attn) == (Family.NEMOTRON_H, AttnKind.GQA)
    # 118 pattern characters: 54 "M", 10 "*", 54 "-"; ids are pattern positions (SGLang).
    assert arch.num_layers == 118
    assert (arch.num_full_layers, arch.num_linear_layers) == (10, 54)
    assert [layer.index for layer in arch.full_layers] == [7, 18, 29, 40, 51, 62, 73, 84, 95, 106]
    assert [layer.index for layer in arch.linear_layers][:4] == [0, 2, 4, 6]
    assert (arch.gqa.num_kv_heads, arch.gqa.head_dim) == (8, 128)  # attention_head_dim
    state = arch.state
    assert state.kind is LinearKind.MAMBA2
    # conv: 256 heads × 64 + 2 × 8 groups × 256 = 16384 + 4096 = 20480
    assert state.conv_shape(attn_tp=1) == (3, 20480)
    assert state.temporal_shape(attn_tp=1) == (256, 64, 256)
    # tp 8: 16384/8 + 2 × (8/8) × 256 = 2048 + 512
    assert state.conv_shape(attn_tp=8) == (3, 2560)
    # tp 16: groups replicated to one per rank (extra_groups_for_head_shards):
    # 16384/16 + 2 × 1 × 256 = 1024 + 512
    assert state.conv_shape(attn_tp=16) == (3, 1536)
    assert state.temporal_shape(attn_tp=16) == (16, 64, 256)
    assert arch.max_context_tokens == 8192


def test_layers_block_type_list(load_dict, embedded):
    data = embedded("nemotron-h-56b-base-8k")
    names = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}
    data["layers_block_type"] = [names[c] for c in data.pop("hybrid_override_pattern")]
    data["mamba_n_groups"] = data.pop("n_groups")
    data["mamba_d_conv"] = data.pop("conv_kernel")
    arch = load_dict(data)
    assert arch.num_layers == 118 and arch.num_full_layers == 10
    assert arch.state.conv_shape(attn_tp=1) == (3, 20480)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda c: c.update(num_hidden_layers=117),
            r"'num_hidden_layers' is 117 but the layer pattern has 118 layers",
        ),
        (
            lambda c: c.update(hybrid_override_pattern="M-X*"),
            r"'hybrid_override_pattern' has characters \['X'\]",
        ),
        (
            lambda c: c.update(n_groups=3),
            r"'n_groups' is 3 \(expected a divisor of mamba_num_heads=256\)",
        ),
        (
            lambda c: c.update(layers_block_type=["mamba"] * 118),
            r"'layers_block_type' disagrees with hybrid_override_pattern",
        ),
    ],
)
def test_contradictions(load_dict, embedded, edit, message):
    data = embedded("nemotron-h-56b-base-8k")
    edit(data)
    with pytest.raises(ModelError, match=message):
        load_dict(data)
