"""kimi_k3 (Kimi-K3): the published config's cache-relevant fields, ledgers derived by hand.

Values are moonshotai/Kimi-K3's config.json (text_config: 93 layers, KDA layers 1..91 except
multiples of 4, full layers 4, 8, …, 92, 93 — 1-based; 96 KDA heads × 128, conv kernel 4;
MLA kv_lora 512 + rope 64; compressed-tensors mxfp4 on routed experts only).
"""

from __future__ import annotations

import pytest

from kvledger.core.units import GiB
from kvledger.model.arch import Family, LayerKind
from kvledger.model.quant import QuantMethod
from kvledger.sglang.capacity import MemoryInput, plan_capacity
from kvledger.sglang.deploy import Deployment
from kvledger.sglang.ledger import state_ledger, token_ledger
from kvledger.sglang.plan import make_plan
from kvledger.sglang.resolve import resolve
from kvledger.sglang.rules import RULES

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
    # the vision config gives no vt_intermediate_size: the tower, and so the weights, unsized
    assert k3.num_params is None


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


def k3_full() -> dict:
    """The config above with the fields Kimi-K3's weights depend on (published text_config:
    routed_expert_hidden_size 3,584, num_experts_per_token 16, full-rank KDA gates, MLA output
    gate, attention residuals every 12 layers)."""
    cfg = k3_config()
    text = cfg["text_config"]
    text.update({"routed_expert_hidden_size": 3584, "num_experts_per_token": 16,
                 "mla_use_output_gate": True, "attn_res_block_size": 12})
    text["linear_attn_config"]["use_full_rank_gate"] = True
    return cfg


def test_weights_by_hand_text_only(load_dict):
    # models/kimi_k3.py; no vision_config here, so no tower.
    cfg = k3_full()
    del cfg["vision_config"]
    p = load_dict(cfg).params
    hidden, proj = 7168, 96 * 128
    # KDA: q, k, v + b + f_a, f_b + full-rank g + convs + o_proj
    kda = (3 * hidden * proj + hidden * 96 + hidden * 128 + 128 * proj + hidden * proj
           + 3 * proj * 4 + proj * hidden)
    assert kda == 443_727_872 and p.linear_mixers == 69 * kda
    # MLA (q_a, q_b, kv_a, kv_b, o) + output gate g_proj 7,168 → 96 × 128
    mla = (hidden * 1536 + 1536 * 96 * 192 + hidden * 576 + 512 * 96 * 256 + 96 * 128 * hidden
           + hidden * 96 * 128)
    assert p.attention == 24 * mla == 5_572_657_152
    # layer 0 dense (33,792); 92 MoE layers: 2 shared experts of 3,072 over tp
    assert p.mlp == 3 * hidden * 33_792 + 92 * 3 * hidden * 2 * 3_072 == 12_881_756_160
    # 896 routed experts per MoE layer in the 3,584-wide latent space
    assert p.experts == 92 * 896 * 3 * 3_584 * 3_072 == 2_722_740_830_208
    # replicated: router 896 × 7,168 and latent down/up 7,168 ↔ 3,584 per MoE layer; two
    # attention-residual projections (7,168 → 1) per layer
    assert p.replicated == 92 * (896 * hidden + 2 * hidden * 3_584) + 93 * 2 * hidden
    assert p.replicated == 5_319_186_432


def test_replicated_parts_stay_whole_on_every_rank(load_dict):
    from kvledger.model.quant import QuantMethod
    from kvledger.sglang.rankweights import weights_ledger

    cfg = k3_full()
    del cfg["vision_config"]
    arch = load_dict(cfg)
    rows8 = {r.component: r.total_bytes
             for r in weights_ledger(arch, Deployment(tp_size=8)).rows}
    assert rows8["replicated layers"] == 5_319_186_432 * 2  # bf16, outside the mxfp4 scheme
    width = QuantMethod.MXFP4.linear_bytes
    assert rows8["routed experts"] == int(2_722_740_830_208 * width) // 8
    assert rows8["dense MLP, shared experts, routers"] == 12_881_756_160 * 2 // 8


def test_vision_tower_counted_when_sized(load_dict):
    # models/kimi_k3_vl.py: wqkv, wo, fc0, fc1 per layer, patch embedding, projector; the sizes
    # below are illustrative (the config above names only the tower's width and depth).
    cfg = k3_full()
    cfg["vision_config"].update({"vt_intermediate_size": 4096, "merge_kernel_size": [2, 2]})
    with_tower = load_dict(cfg).params.replicated
    del cfg["vision_config"]
    tower = (27 * (1024 * 3 * 1024 + 1024 * 1024 + 2 * 1024 * 4096) + 3 * 14 * 14 * 1024
             + 4096 * 4096 + 4096 * 7168)
    assert with_tower - load_dict(cfg).params.replicated == tower == 386_478_080


def test_vllm_plans_kimi_k3(k3):
    # vLLM 0.33: KimiK3DeltaAttention.get_state_dtype → kda_state_dtype(model dtype, auto, flag):
    # conv bf16, recurrence float32 unless the flag says bfloat16 (models/kimi_k3/nvidia/kda.py)
    from kvledger.core.errors import DeploymentError
    from kvledger.vllm.deploy import VllmDeployment
    from kvledger.vllm.layout import vllm_layout
    from kvledger.vllm.rules import RULES as VLLM_RULES

    lay = vllm_layout(k3, VllmDeployment(tensor_parallel_size=8), VLLM_RULES["vllm-0.33"])
    assert lay.mamba.real_page_bytes == 3 * 36_864 // 8 * 2 + 12 * 128 * 128 * 4 == 814_080
    half = vllm_layout(k3, VllmDeployment(tensor_parallel_size=8,
                                          mamba_ssm_cache_dtype="bfloat16"),
                       VLLM_RULES["vllm-0.33"])
    assert half.mamba.real_page_bytes == 3 * 4_608 * 2 + 12 * 128 * 128 * 2
    with pytest.raises(DeploymentError, match="supports only auto, float32, and bfloat16"):
        vllm_layout(k3, VllmDeployment(mamba_ssm_cache_dtype="float16"),
                    VLLM_RULES["vllm-0.33"])


def test_vision_tower_shape_is_what_sglang_reads(load_dict):
    """configs/kimi_k3.py `KimiK3VisionConfig` sets num_hidden_layers = vt_num_hidden_layers
    and hidden_size = vt_hidden_size, which `adjust_mem_fraction_for_vlm` reads."""
    cfg = k3_config()
    assert load_dict(cfg).vit_shape == (27, 1024)
    cfg["vision_config"].update({"vt_num_hidden_layers": 30, "num_hidden_layers": 12})
    assert load_dict(cfg).vit_shape == (30, 1024)  # the class overwrites num_hidden_layers
