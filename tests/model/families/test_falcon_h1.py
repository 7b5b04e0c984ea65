"""Falcon-H1-0.5B golden plan: attention and Mamba2 on every layer."""

from __future__ import annotations

import pytest

from kvledger.model.arch import AttnKind, Family, LayerKind, LayerSpec, LinearKind, ModelError
from kvledger.model.config import load_model


def test_falcon_h1_golden():
    arch = load_model("falcon-h1-0.5b")
    assert (arch.family, arch.attn) == (Family.FALCON_H1, AttnKind.GQA)
    # Every layer is both: 36 FULL and 36 LINEAR entries, 36 decoder layers.
    assert arch.num_layers == 36
    assert [layer.index for layer in arch.full_layers] == list(range(36))
    assert [layer.index for layer in arch.linear_layers] == list(range(36))
    assert arch.layers[:2] == (
        LayerSpec(index=0, kind=LayerKind.FULL),
        LayerSpec(index=0, kind=LayerKind.LINEAR),
    )
    assert arch.is_hybrid
    assert (arch.gqa.num_kv_heads, arch.gqa.head_dim) == (2, 64)
    state = arch.state
    assert state.kind is LinearKind.MAMBA2 and state.ssm_dtype_default is None
    # conv: 24 heads × 64 + 2 × 1 group × 128 = 1536 + 256 = 1792
    assert state.conv_shape(attn_tp=1) == (3, 1792)
    assert state.temporal_shape(attn_tp=1) == (24, 64, 128)
    # tp 2: the single group is replicated, 1536/2 + 2 × 128 = 1024
    # (SGLang: n_groups 1 → 2, conv_dim 1536 + 2·2·128 = 2048, / 2 = 1024)
    assert state.conv_shape(attn_tp=2) == (3, 1024)
    assert state.temporal_shape(attn_tp=2) == (12, 64, 128)
    assert arch.max_context_tokens == 16_384


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda c: c.update(mamba_d_ssm=2048),
            r"'mamba_d_ssm' is 2048 \(expected mamba_n_heads × mamba_d_head = 1536\)",
        ),
        (
            lambda c: c.update(attn_layer_indices=[0, 4, 8]),
            r"'attn_layer_indices' is set \(expected null",
        ),
        (
            lambda c: c.update(mamba_d_head="auto", mamba_n_heads=3),
            r"'mamba_n_heads' is 3 \(expected a divisor of the mamba width 2048\)",
        ),
    ],
)
def test_contradictions(load_dict, embedded, edit, message):
    data = embedded("falcon-h1-0.5b")
    edit(data)
    with pytest.raises(ModelError, match=message):
        load_dict(data)


def test_auto_head_dim_uses_expand_times_hidden(load_dict, embedded):
    data = embedded("falcon-h1-0.5b")
    data.update(mamba_d_head="auto", mamba_n_heads=32)  # width 2 × 1024 = 2048 → 64 per head
    assert load_dict(data).state.temporal_shape(attn_tp=1) == (32, 64, 128)
