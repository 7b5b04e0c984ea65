"""Weights per rank, itemised by how SGLang shards each part (see kvledger.sglang.rankweights).

Parameter counts are the config's (DeepSeek-V3 attention by hand below); the shard of each
part follows the model classes' parallel layers: VocabParallelEmbedding (replicated under DP
attention), ParallelLMHead over tp, attention over attn_tp, MLP and experts over tp.
"""

from __future__ import annotations

from dataclasses import fields

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvledger.core.units import GiB
from kvledger.model.config import load_model
from kvledger.model.quant import QuantMethod, bytes_for
from kvledger.sglang.deploy import Deployment, DeploymentError, SpecAlgorithm
from kvledger.sglang.plan import make_plan
from kvledger.sglang.rankweights import weights_ledger

# DeepSeek-V3 MLA per layer (hidden 7168, 128 heads, q_lora 1536, kv_lora 512, nope 128,
# rope 64, v 128): q_a 7168·1536 + q_b 1536·128·192 + kv_a 7168·576 + kv_b 512·128·256 +
# o 128·128·7168 = 187,105,280; × 61 layers.
V3_ATTENTION = 187_105_280 * 61
V3_EMBED = 129_280 * 7_168


def rows(model: str, **deploy) -> dict[str, int]:
    ledger = weights_ledger(load_model(model), Deployment(**deploy))
    return {row.component: row.total_bytes for row in ledger.rows}


def test_dp_attention_holds_the_whole_attention_stack():
    # The case: tp 8 and tp 8 + DP attention 8 were both 78.12 GiB per rank.
    tp = rows("deepseek-v3", tp_size=8)
    dp = rows("deepseek-v3", tp_size=8, dp_size=8, enable_dp_attention=True)
    assert V3_ATTENTION == 11_413_422_080
    assert tp["attention"] == V3_ATTENTION // 8  # fp8: 1 B per parameter, attn_tp 8
    assert dp["attention"] == V3_ATTENTION  # attn_tp 1
    assert tp["input embedding"] == V3_EMBED * 2 // 8 and dp["input embedding"] == V3_EMBED * 2
    assert tp["lm_head"] == dp["lm_head"] == V3_EMBED * 2 // 8
    assert tp["routed experts"] == dp["routed experts"]
    assert sum(dp.values()) - sum(tp.values()) == (V3_ATTENTION - V3_ATTENTION // 8) + (
        V3_EMBED * 2 - V3_EMBED * 2 // 8)


def test_expert_parallelism_keeps_experts_per_rank():
    # ep groups of experts / ep, each TP over tp / ep: experts / tp per rank either way.
    assert rows("deepseek-v3", tp_size=8, ep_size=8) == rows("deepseek-v3", tp_size=8)
    with pytest.raises(DeploymentError, match="--ep-size 3: --tp-size 8 must be a multiple"):
        Deployment(tp_size=8, ep_size=3)


def test_dense_model_sums_to_the_bf16_checkpoint():
    # Llama-3.1-8B: 8,029,995,008 params × 2 B on one rank.
    llama = rows("llama-3.1-8b")
    assert sum(llama.values()) == 16_059_990_016
    assert llama["attention"] == 1_342_177_280 * 2


def test_quantization_flag_overrides_the_checkpoint():
    # --quantization fp8 on Llama: linear layers 1 B, embeddings and lm_head stay bf16.
    fp8 = rows("llama-3.1-8b", quantization=QuantMethod.FP8)
    assert fp8["attention"] == 1_342_177_280 and fp8["input embedding"] == 525_336_576 * 2
    # mxfp4 quantizes only routed experts: 4 bits + an e8m0 scale per 32 = 0.53125 B.
    mx = rows("deepseek-v3", tp_size=8, quantization=QuantMethod.MXFP4)
    assert mx["attention"] == V3_ATTENTION * 2 // 8
    assert mx["routed experts"] == int(653_908_770_816 * 0.53125) // 8
    nv = rows("deepseek-v3", tp_size=8, quantization=QuantMethod.NVFP4)
    assert nv["routed experts"] == int(653_908_770_816 * 0.5625) // 8


def test_draft_layers_only_with_speculative_decoding():
    plain = rows("deepseek-v3", tp_size=8)
    spec = rows("deepseek-v3", tp_size=8, speculative_algorithm=SpecAlgorithm.EAGLE,
                speculative_num_draft_tokens=4, max_running_requests=48)
    assert "MTP draft attention" not in plain
    assert spec["MTP draft attention"] == 187_105_280 // 8  # one MTP layer, attn_tp 8


def test_weights_gib_still_overrides_and_the_gpu_subtracts_the_ledger():
    plan = make_plan("deepseek-v3", Deployment(tp_size=8, dp_size=8, enable_dp_attention=True),
                     gpu="H200")
    memory = plan.capacity.memory
    assert memory.pre_load_free_bytes - memory.available_bytes == plan.ledgers.weights.total_bytes
    assert plan.weights_estimated
    fixed = make_plan("deepseek-v3", Deployment(tp_size=8), gpu="H200", weights_gib=70)
    assert fixed.capacity.memory.pre_load_free_bytes - fixed.capacity.memory.available_bytes \
        == 70 * GiB
    assert not fixed.weights_estimated


layouts = st.sampled_from([(1, 1, False), (2, 1, False), (4, 1, False), (8, 1, False),
                           (8, 8, True), (8, 4, True), (8, 2, True)])
models = st.sampled_from(["deepseek-v3", "deepseek-v3.2", "glm-5.3-flash", "llama-3.1-8b",
                          "kimi-linear-48b-a3b-instruct", "qwen3-next-80b-a3b-instruct",
                          "nemotron-h-56b-base-8k", "falcon-h1-0.5b"])


@settings(max_examples=40, deadline=None)
@given(models, layouts, st.sampled_from([None, *QuantMethod]))
def test_weights_per_rank_never_below_the_unsharded_share(model, layout, quant):
    tp, dp, dp_attention = layout
    arch = load_model(model)
    dep = Deployment(tp_size=tp, dp_size=dp, enable_dp_attention=dp_attention,
                     quantization=quant)
    ledger = weights_ledger(arch, dep)
    method = quant if quant is not None else arch.quant
    whole = sum(int(getattr(arch.params, f.name) * bytes_for(method, f.name))
                for f in fields(arch.params) if f.name != "draft_layers"
                and not f.name.startswith("draft"))
    # each row floors once: at most one byte per row below the exact share
    assert ledger.total_bytes >= whole // tp - len(ledger.rows)
    assert ledger.total_bytes <= whole


def test_nemotron_h_itemised_by_hand():
    # Nemotron-H-56B: 10 attention (64 q heads, 8 KV, 128), 54 Mamba2 (256 heads × 64,
    # 8 groups, d_state 256), 54 relu² MLPs (up + down, 32,768), untied 131,072 × 8,192.
    p = load_model("nemotron-h-56b-base-8k").params
    assert p.embedding == p.lm_head == 131_072 * 8_192
    assert p.attention == 10 * (2 * 8_192 * 64 * 128 + 2 * 8_192 * 8 * 128) == 1_509_949_440
    conv_dim = 256 * 64 + 2 * 8 * 256
    mixer = 8_192 * (256 * 64 + conv_dim + 256) + conv_dim * 4 + 256 * 64 * 8_192
    assert p.linear_mixers == 54 * mixer == 23_672_881_152
    assert p.mlp == 54 * 2 * 8_192 * 32_768 and p.experts == 0
    # tp 8, bf16: every part over 8 (attention and Mamba over attn_tp 8)
    tp8 = rows("nemotron-h-56b-base-8k", tp_size=8)
    assert tp8["linear-attention mixers"] == 54 * mixer * 2 // 8
    assert tp8["input embedding"] == tp8["lm_head"] == 131_072 * 8_192 * 2 // 8
    # DP attention 8 (attn_tp 1): Mamba2 and attention whole on every rank, embedding too
    dp8 = rows("nemotron-h-56b-base-8k", tp_size=8, dp_size=8, enable_dp_attention=True)
    assert dp8["linear-attention mixers"] == 54 * mixer * 2
    assert dp8["dense MLP, shared experts, routers"] == tp8["dense MLP, shared experts, routers"]


def test_falcon_h1_itemised_by_hand():
    # Falcon-H1-0.5B: 36 layers each with GQA (8 q heads, 2 KV, 64), Mamba2 (24 × 64, 1 group,
    # d_state 128) and a gated MLP (2,048); untied 32,784 × 1,024.
    p = load_model("falcon-h1-0.5b").params
    assert p.attention == 36 * (2 * 1_024 * 8 * 64 + 2 * 1_024 * 2 * 64) == 47_185_920
    assert p.linear_mixers == 36 * (1_024 * (1_536 + 1_792 + 24) + 1_792 * 4 + 1_536 * 1_024)
    assert p.mlp == 36 * 3 * 1_024 * 2_048 == 226_492_416
    assert p.total == 2 * 32_784 * 1_024 + 47_185_920 + 180_449_280 + 226_492_416 == 521_269_248
    assert sum(rows("falcon-h1-0.5b", tp_size=2).values()) == 521_269_248 * 2 // 2


def test_vision_tower_shards_over_attention_tp():
    # SGLang's VisionAttention (layers/attention/vision.py) and Qwen3_VisionMLP (qwen3_vl.py)
    # take tp_size = get_attention_tp_size() unless --mm-enable-dp-encoder: under DP attention
    # (attn_tp 1) every rank holds the whole tower. Qwen3.5-35B-A3B's tower, bf16:
    vision = load_model("qwen3.5-35b-a3b").params.vision
    assert vision == 443_510_784
    tp = rows("qwen3.5-35b-a3b", tp_size=4)
    dp = rows("qwen3.5-35b-a3b", tp_size=4, dp_size=4, enable_dp_attention=True)
    assert tp["vision tower"] == vision * 2 // 4
    assert dp["vision tower"] == vision * 2
    half = rows("qwen3.5-35b-a3b", tp_size=4, dp_size=2, enable_dp_attention=True)
    assert half["vision tower"] == vision * 2 // 2  # attn_tp 2
