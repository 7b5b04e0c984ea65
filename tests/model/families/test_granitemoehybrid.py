"""granitemoehybrid: the Transformers documentation's GraniteMoeHybrid example config, ledgers
derived by hand (SGLang Mamba2StateShape.create: conv (d_conv − 1, heads·head_dim +
2·groups·d_state), temporal (heads, head_dim, d_state), fp32 by default)."""

from __future__ import annotations

import pytest

from kvledger.capacity import MemoryInput, plan_capacity
from kvledger.deploy import Deployment
from kvledger.ledger import state_ledger, token_ledger
from kvledger.model.arch import Family, ModelError
from kvledger.resolve import resolve
from kvledger.rules import RULES
from kvledger.units import GiB


def granite() -> dict:
    return {
        "architectures": ["GraniteMoeHybridForCausalLM"], "model_type": "granitemoehybrid",
        "hidden_size": 512, "num_hidden_layers": 8, "num_attention_heads": 8,
        "num_key_value_heads": 8, "intermediate_size": 1024, "shared_intermediate_size": 512,
        "layer_types": ["mamba", "mamba", "mamba", "attention"] * 2,
        "mamba_d_conv": 4, "mamba_d_head": 128, "mamba_d_state": 128, "mamba_expand": 2,
        "mamba_n_groups": 1, "mamba_n_heads": 8, "max_position_embeddings": 4096,
        "num_local_experts": 8, "num_experts_per_tok": 2, "position_embedding_type": "nope",
        "tie_word_embeddings": True, "vocab_size": 49152,
    }


@pytest.mark.parametrize("rules", ["sglang-0.5.21", "sglang-0.5.23"])
def test_golden_ledgers(load_dict, rules):
    arch = load_dict(granite())
    assert arch.family is Family.GRANITE_MOE_HYBRID
    assert (arch.num_full_layers, arch.num_linear_layers) == (2, 6)
    lay = resolve(arch, Deployment(), RULES[rules])
    # per token: 2 attention layers × K+V 2 × 8 heads × 64 (512 / 8) × 2 B = 4,096 B
    assert token_ledger(lay).total_bytes == 2 * 2 * 8 * 64 * 2 == 4_096
    # per slot: conv (3, 8·128 + 2·1·128 = 1,280) bf16 = 7,680 B; temporal (8, 128, 128) fp32
    # = 524,288 B; × 6 Mamba layers = 3,191,808 B
    assert state_ledger(lay).total_bytes == 6 * (3 * 1_280 * 2 + 8 * 128 * 128 * 4) == 3_191_808
    # attn_tp 2: 4 heads per rank; the single B/C group is replicated on both ranks
    lay2 = resolve(arch, Deployment(tp_size=2), RULES[rules])
    assert lay2.state.conv_shape == (3, 4 * 128 + 2 * 128)
    # capacity: rest 10 GiB; K = floor(10 GiB·0.9/1.9 / 3,191,808) − 1 = 1,592
    plan = plan_capacity(lay, MemoryInput.available(10 * GiB))
    assert plan.state_slots == int(10 * GiB * 0.9 / 1.9 // 3_191_808) - 1 == 1_592
    assert plan.max_total_tokens == (10 * GiB - 1_593 * 3_191_808) // 4_096


def test_bad_layer_types(load_dict):
    data = granite()
    data["layer_types"][2] = "mlp"
    with pytest.raises(ModelError, match=r"layer_types\[2\]' is 'mlp' \(expected 'mamba' or "):
        load_dict(data)
    data = granite()
    data["layer_types"] = data["layer_types"][:5]
    with pytest.raises(ModelError, match="has 5 entries"):
        load_dict(data)


def test_weights_itemised_by_hand(load_dict):
    # transformers' GraniteMoeHybridDecoderLayer: 8 experts (gated, 1,024) + router and a gated
    # shared MLP (512) on every layer; tied embedding.
    p = load_dict(granite()).params
    assert (p.embedding, p.lm_head) == (49_152 * 512, 0)
    assert p.attention == 2 * 4 * 512 * 512 == 2_097_152  # q, k, v, o: 8 heads × 64 each
    # Mamba2: in_proj 512·(1,024 + 1,280 + 8) + conv 1,280·4 + out_proj 1,024·512
    assert p.linear_mixers == 6 * (512 * 2_312 + 1_280 * 4 + 1_024 * 512) == 10_278_912
    assert p.mlp == 8 * (3 * 512 * 512 + 512 * 8) == 6_324_224
    assert p.experts == 8 * 8 * 3 * 512 * 1_024 == 100_663_296
    # bf16 at tp 2: every part halves (attention and mixers over attn_tp 2)
    from kvledger.rankweights import weights_ledger

    ledger = weights_ledger(load_dict(granite()), Deployment(tp_size=2))
    assert ledger.total_bytes == (p.total * 2) // 2 == 144_529_408


def test_dense_variant_has_no_experts(load_dict):
    cfg = granite() | {"num_local_experts": 0}
    p = load_dict(cfg).params
    assert p.experts == 0 and p.mlp == 8 * 3 * 512 * 512
