"""kimi_k3 (Kimi-K3): the published config's cache-relevant fields, ledgers derived by hand.

Values are moonshotai/Kimi-K3's config.json (text_config: 93 layers, KDA layers 1..91 except
multiples of 4, full layers 4, 8, …, 92, 93 — 1-based; 96 KDA heads × 128, conv kernel 4;
MLA kv_lora 512 + rope 64; compressed-tensors mxfp4 on routed experts only).
"""

from __future__ import annotations

import pytest

from kvledger.capacity import MemoryInput, plan_capacity
from kvledger.deploy import Deployment
from kvledger.ledger import state_ledger, token_ledger
from kvledger.model.arch import Family, LayerKind
from kvledger.model.quant import QuantMethod
from kvledger.plan import make_plan
from kvledger.resolve import resolve
from kvledger.rules import RULES
from kvledger.units import GiB

FULL = [4 * i for i in range(1, 24)] + [93]
KDA = [i for i in range(1, 92) if i % 4]


def k3_config() -> dict:
    return {
        "architectures": ["KimiK3ForConditionalGeneration"], "model_type": "kimi_k3",
        "tie_word_embeddings": False,
        "text_config": {
            "model_type": "kimi_linear", "hidden_size": 7168, "num_hidden_layers": 93,
            "num_attention_heads": 96, "num_key_value_heads": 96, "vocab_size": 163840,
            "intermediate_size": 33792, "moe_intermediate_size": 3072, "num_experts": 896,
            "num_shared_experts": 2, "first_k_dense_replace": 1, "moe_layer_freq": 1,
            "num_nextn_predict_layers": 0, "kv_lora_rank": 512, "q_lora_rank": 1536,
            "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
            "max_position_embeddings": 1048576, "tie_word_embeddings": False,
            "linear_attn_config": {"full_attn_layers": FULL, "kda_layers": KDA, "head_dim": 128,
                                   "num_heads": 96, "short_conv_kernel_size": 4},
            "quantization_config": {"quant_method": "compressed-tensors",
                                    "format": "mxfp4-pack-quantized"},
        },
        "vision_config": {"vt_hidden_size": 1024, "vt_num_hidden_layers": 27, "patch_size": 14},
    }


@pytest.fixture
def k3(load_dict):
    return load_dict(k3_config())


def test_layout_and_quantization(k3):
    assert k3.family is Family.KIMI_K3 and k3.model_type == "kimi_k3"
    assert (k3.num_full_layers, k3.num_linear_layers) == (24, 69)
    # 1-based lists → 0-based ids: full layers 3, 7, …, 91 and 92
    assert [layer.index for layer in k3.layers if layer.kind is LayerKind.FULL][-3:] == [87, 91, 92]
    assert k3.is_multimodal and k3.quant is QuantMethod.MXFP4
    assert k3.max_context_tokens == 1_048_576
    assert k3.num_params is None  # latent MoE not modelled: --weights-gib needed with --gpu


@pytest.mark.parametrize("rules", ["sglang-0.5.21", "sglang-0.5.23"])
def test_golden_ledgers(k3, rules):
    lay = resolve(k3, Deployment(), RULES[rules])
    # per token: 24 MLA layers × (512 + 64) × 2 B (bf16) = 27,648 B
    assert token_ledger(lay).total_bytes == 24 * 576 * 2 == 27_648
    # per slot: conv (3, 3·96·128 = 36,864) bf16 = 221,184 B + temporal (96, 128, 128) fp32 =
    # 6,291,456 B → 6,512,640 B per KDA layer × 69 = 449,372,160 B
    assert state_ledger(lay).total_bytes == 69 * (3 * 36_864 * 2 + 96 * 128 * 128 * 4)
    assert state_ledger(lay).total_bytes == 449_372_160
    # attn_tp 8 shards KDA heads: 12 per rank → 449,372,160 / 8
    lay8 = resolve(k3, Deployment(tp_size=8), RULES[rules])
    assert state_ledger(lay8).total_bytes == 449_372_160 // 8
    assert token_ledger(lay8).total_bytes == 27_648  # the MLA latent is not head-sharded


def test_capacity_with_the_multimodal_reservation(k3):
    # rest = 100 GiB − 100 MiB; K = floor(rest·0.9/1.9 / 449,372,160) − 1 = 112; N = K // 5 = 22
    plan = plan_capacity(resolve(k3, Deployment(), RULES["sglang-0.5.21"]),
                         MemoryInput.available(100 * GiB))
    rest = 100 * GiB - 100 * 2**20
    assert plan.state_slots == int(rest * 0.9 / 1.9 // 449_372_160) - 1 == 112
    assert plan.max_total_tokens == (rest - 113 * 449_372_160) // 27_648
    assert plan.max_running_requests == 22


def test_gpu_needs_weights_gib(k3, tmp_path):
    import json

    path = tmp_path / "k3.json"
    path.write_text(json.dumps(k3_config()))
    with pytest.raises(ValueError, match="weight size unknown; pass --weights-gib"):
        make_plan(str(path), gpu="B300")
    plan = make_plan(str(path), Deployment(tp_size=8), gpu="B300", weights_gib=190)
    assert plan.capacity.memory.pre_load_free_bytes - plan.capacity.memory.available_bytes \
        == 190 * GiB
