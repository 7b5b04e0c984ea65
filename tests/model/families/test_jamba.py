"""jamba: AI21-Jamba-1.5-Mini's config (ai21labs/AI21-Jamba-1.5-Mini config.json), ledgers by hand.

- layout: transformers' JambaConfig.layers_block_type, attention where
  i % attn_layer_period == attn_layer_offset (8, 4 → layers 4, 12, 20, 28);
- state: vLLM MambaStateShapeCalculator.mamba1_state_shape (model_executor/layers/mamba/
  mamba_utils.py), conv (d_conv − 1, d_inner / tp), temporal (d_inner / tp, d_state),
  d_inner = mamba_expand × hidden = 8,192; dtypes from mamba1_state_dtype → _mamba_state_dtype
  (temporal follows the conv dtype, bf16, unless --mamba-ssm-cache-dtype);
- SGLang: no Jamba class in python/sglang/srt/models/, and model_loader/utils.py
  resolve_transformers_arch refuses the Transformers fallback under --model-impl auto.
"""

from __future__ import annotations

import pytest

from kvledger.core.units import GiB
from kvledger.model.arch import Family, LayerKind, ModelError
from kvledger.model.config import load_model
from kvledger.sglang.deploy import Deployment, DeploymentError
from kvledger.sglang.resolve import resolve
from kvledger.sglang.rules import RULES
from kvledger.vllm.deploy import VllmDeployment
from kvledger.vllm.layout import vllm_layout
from kvledger.vllm.plan import make_vllm_plan
from kvledger.vllm.rules import RULES as VLLM_RULES

NAME = "jamba-1.5-mini"


def test_layers_and_state_shape():
    arch = load_model(NAME)
    assert arch.family is Family.JAMBA
    full = [s.index for s in arch.layers if s.kind is LayerKind.FULL]
    assert full == [4, 12, 20, 28]
    assert arch.num_linear_layers == 28 and arch.num_layers == 32
    assert (arch.gqa.num_kv_heads, arch.gqa.head_dim) == (8, 4096 // 32)
    assert arch.state.conv_shape(attn_tp=1) == (4 - 1, 2 * 4096)
    assert arch.state.temporal_shape(attn_tp=1) == (8192, 16)
    assert arch.state.conv_shape(attn_tp=4) == (3, 2048)
    assert arch.state.temporal_shape(attn_tp=4) == (2048, 16)
    assert arch.max_context_tokens == 262_144


def test_weights_by_hand():
    p = load_model(NAME).params
    hidden, d_inner, dt_rank, d_state, k = 4096, 8192, 256, 16, 4
    assert p.embedding == p.lm_head == 65_536 * hidden  # untied
    # q + o (32 × 128 each way) + k + v (8 × 128): 4,096·(4,096·2 + 1,024·2) = 41,943,040
    assert p.attention == 4 * hidden * (2 * 4096 + 2 * 1024) == 167_772_160
    mixer = (hidden * 2 * d_inner + d_inner * k + d_inner * (dt_rank + 2 * d_state)
             + dt_rank * d_inner + d_inner * d_state + d_inner * hidden)
    assert p.linear_mixers == 28 * mixer == 2_947_940_352
    dense = 3 * hidden * 14_336
    # expert period 2 offset 1: 16 MoE layers (odd), 16 dense MLP layers (even)
    assert p.mlp == 16 * dense + 16 * hidden * 16 == 2_819_620_864
    assert p.experts == 16 * 16 * dense == 45_097_156_608
    # AI21 states 52B total parameters for Jamba 1.5 Mini
    assert p.total == 51_569_360_896


@pytest.mark.parametrize("rules", ["sglang-0.5.21", "sglang-0.5.23"])
def test_sglang_refuses_with_its_loader_message(rules):
    with pytest.raises(DeploymentError) as err:
        resolve(load_model(NAME), Deployment(), RULES[rules])
    message = str(err.value)
    assert ("JambaForCausalLM has no SGlang implementation and the Transformers implementation "
            "is not compatible with SGLang.") in message
    assert "resolve_transformers_arch" in message and "--engine vllm" in message


@pytest.mark.parametrize("rules", ["vllm-0.13", "vllm-0.33"])
def test_vllm_layout_golden(rules):
    lay = vllm_layout(load_model(NAME), VllmDeployment(tensor_parallel_size=1),
                      VLLM_RULES[rules])
    assert lay.attention.bytes_per_token == 8 * 2 * 128 * 2 == 4_096  # 8 KV heads, K+V, bf16
    conv, temporal = 3 * 8192 * 2, 8192 * 16 * 2  # bf16 both (conv dtype)
    assert lay.mamba.shapes == ((3, 8192), (8192, 16))
    assert lay.mamba.real_page_bytes == conv + temporal == 311_296
    # granule 16: smallest multiple of 16 tokens whose 4,096 B/token page covers the state
    assert lay.block_tokens == 16 * -(-311_296 // (16 * 4_096)) == 80
    assert lay.page_bytes == 80 * 4_096 == 327_680
    # 4 attention + 28 Mamba layers → groups of 4: 1 attention group + 7 Mamba groups
    assert [g.kind for g in lay.groups] == ["attention"] + ["mamba"] * 7
    assert lay.bytes_per_block == 4 * 327_680


def test_vllm_tp2_and_speculative_rows():
    lay = vllm_layout(load_model(NAME), VllmDeployment(tensor_parallel_size=2),
                      VLLM_RULES["vllm-0.33"])
    assert lay.mamba.shapes == ((3, 4096), (4096, 16))
    assert lay.attention.bytes_per_token == 4 * 2 * 128 * 2
    # mamba1_state_shape has no num_spec: the conv state keeps K − 1 rows with MTP tokens too
    spec = vllm_layout(load_model(NAME), VllmDeployment(num_speculative_tokens=2),
                       VLLM_RULES["vllm-0.33"])
    assert spec.mamba.shapes[0] == (3, 8192)


def test_vllm_capacity_40_gib():
    plan = make_vllm_plan(NAME, VllmDeployment(), rules="vllm-0.33", available_gib=40)
    blocks = 40 * GiB // (4 * 327_680)
    assert plan.capacity.num_blocks == blocks == 32_768
    # one 262,144-token request: cdiv(262,144, 80) attention blocks + 2 (align) per Mamba group
    per_request = -(-262_144 // 80) + 7 * 2
    assert plan.layout.blocks_per_request() == per_request == 3_291
    assert plan.capacity.logged_tokens == int(blocks / per_request * 262_144)


def test_offset_at_or_past_the_period_is_named(load_dict, embedded):
    data = embedded(NAME)
    data["attn_layer_offset"] = 8
    with pytest.raises(ModelError, match=r"'attn_layer_offset' is 8 \(expected below "
                                         r"attn_layer_period=8\)"):
        load_dict(data)
