"""granitemoehybrid: the Transformers documentation's GraniteMoeHybrid example config, ledgers
derived by hand (SGLang Mamba2StateShape.create: conv (d_conv − 1, heads·head_dim +
2·groups·d_state), temporal (heads, head_dim, d_state), fp32 by default)."""

from __future__ import annotations

import pytest

from kvledger.core.units import GiB
from kvledger.model.arch import Family, ModelError
from kvledger.sglang.capacity import MemoryInput, plan_capacity
from kvledger.sglang.deploy import Deployment
from kvledger.sglang.ledger import state_ledger, token_ledger
from kvledger.sglang.resolve import resolve
from kvledger.sglang.rules import RULES


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
    from kvledger.sglang.rankweights import weights_ledger

    ledger = weights_ledger(load_dict(granite()), Deployment(tp_size=2))
    assert ledger.total_bytes == (p.total * 2) // 2 == 144_529_408


def test_dense_variant_has_no_experts(load_dict):
    cfg = granite() | {"num_local_experts": 0}
    p = load_dict(cfg).params
    assert p.experts == 0 and p.mlp == 8 * 3 * 512 * 512
    # the time model: no routed experts, every weight multiplied through
    from kvledger.model.compute import compute_profile

    prof = compute_profile(load_dict(cfg))
    assert (prof.moe_layers, prof.expert_params) == (0, 0)
    assert prof.active_params == prof.dense_params == p.total


def test_compute_profile_routes_top_k_of_every_layers_experts(load_dict):
    # transformers' GraniteMoeHybridDecoderLayer: a block_sparse_moe (8 experts of 1,024,
    # top 2) on each of the 8 layers; the shared MLP, router, mixers, attention and the tied
    # embedding (it is the lm_head) are multiplied through by every token.
    from kvledger.model.compute import compute_profile

    p = compute_profile(load_dict(granite()))
    assert (p.moe_layers, p.num_experts, p.top_k) == (8, 8, 2)
    assert p.expert_params == 3 * 512 * 1_024 == 1_572_864
    embedding = 49_152 * 512
    assert p.dense_params == embedding + 2_097_152 + 10_278_912 + 6_324_224 == 43_866_112
    assert p.active_params == 43_866_112 + 8 * 2 * 1_572_864 == 69_031_936
    assert p.attn_pair_flops == 2 * 8 * (64 + 64) == 2_048  # 8 heads, qk and v 64 wide
    # Mamba2 per token: state update + read-out 4 · 8 heads · 128 · 128, plus the chunked
    # scan at mamba_chunk_size (256, transformers' default): 2 · 8 · 256 · (128 + 128)
    assert p.linear_token_flops == 4 * 8 * 128 * 128 + 2 * 8 * 256 * 256 == 1_572_864
    assert (p.full_layers, p.linear_layers, p.index_layers) == (2, 6, 0)
    chunked = compute_profile(load_dict(granite() | {"mamba_chunk_size": 64}))
    assert chunked.linear_token_flops == 4 * 8 * 128 * 128 + 2 * 8 * 64 * 256


def test_roofline_step_flops_and_bytes_by_hand(load_dict):
    # One step on one H200: a 512-token prefill chunk at positions 0..511 and one request
    # decoding at context 1,024. bf16 weights (2 B per parameter), tp 1.
    from kvledger.core.gpus import get_gpu
    from kvledger.sglang.plan import make_plan
    from kvledger.sim.timing import Roofline, StepWork

    arch = load_dict(granite())
    plan = make_plan(arch, available_gib=10)
    r = Roofline.for_plan(plan, get_gpu("h200"))
    flops, moved = r.flops_and_bytes(StepWork(prefill_spans=((0, 512),),
                                              decode_contexts=(1_024,)))
    tokens = 513
    pairs = 512 * 513 // 2 + 1_024  # causal pairs of the chunk + the decode's keys
    assert flops == (tokens * 2 * 69_031_936  # weights, top-2 experts per layer
                     + tokens * 6 * 1_572_864  # Mamba2 layers
                     + pairs * 2 * 2_048)  # 2 attention layers
    # 513 tokens touch 8 · (1 − (6/8)^513) ≈ 8 of each layer's 8 experts: all of them
    experts = 8 * (1 - (1 - 2 / 8) ** 513)
    kv_row = 2 * 2 * 8 * 64 * 2  # 2 layers · K+V · 8 heads · 64 · bf16 = 4,096 B
    slot = 3_191_808  # one Mamba2 state slot (test_golden_ledgers)
    assert moved == pytest.approx(43_866_112 * 2 + 8 * experts * 1_572_864 * 2
                                  + (512 + 1_024) * kv_row  # rows read: the prefix, the context
                                  + tokens * kv_row  # rows written
                                  + 2 * 2 * slot, rel=1e-12)  # 2 requests read + write a state
    # decode alone reads 2 of 8 experts per layer, not all 64 (the dense count did)
    _, one = r.flops_and_bytes(StepWork(decode_contexts=(1_024,)))
    assert one == pytest.approx(43_866_112 * 2 + 8 * 2 * 1_572_864 * 2 + 1_025 * kv_row
                                + 2 * slot, rel=1e-12)


def test_simulate_times_granite_on_the_roofline(load_dict, tmp_path):
    # `kvledger simulate --model <granite config>`: one request alone (1,024 prompt tokens, 8
    # generated), so each decode step is the roofline's one-token step at its context.
    import json

    from typer.testing import CliRunner

    from kvledger.cli import app
    from kvledger.core.gpus import get_gpu
    from kvledger.sglang.plan import make_plan
    from kvledger.sim.timing import Roofline, StepWork

    arch = load_dict(granite())
    trace = tmp_path / "trace.jsonl"
    trace.write_text('{"timestamp": 0, "input_length": 1024, "output_length": 8, '
                     '"hash_ids": [1, 2]}\n')
    result = CliRunner().invoke(app, ["simulate", "--model", arch.source, "--trace", str(trace),
                                      "--available-gib", "10", "--no-progress", "--json"])
    assert result.exit_code == 0, result.output
    latency = json.loads(result.output)["latency"]
    assert latency["model"].startswith("roofline on H200")
    r = Roofline.for_plan(make_plan(arch, available_gib=10), get_gpu("h200"))
    steps = [r.step_ms(StepWork(decode_contexts=(1_024 + i,))) for i in range(1, 8)]
    assert latency["tpot_ms"]["p50"] == pytest.approx(sorted(steps)[3], rel=1e-3)
