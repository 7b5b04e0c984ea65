"""The roofline step-time model: its terms, exact, and one published measurement."""

from __future__ import annotations

import pytest

from kvledger.core.gpus import GpuError, get_gpu, gpu_perf
from kvledger.model.compute import compute_profile
from kvledger.model.config import load_model
from kvledger.sglang.plan import make_plan
from kvledger.sim.config import SimConfig
from kvledger.sim.replay import simulate
from kvledger.sim.timing import Efficiency, Roofline, StepCost, StepWork, _causal_pairs
from sim.sim_factories import request, workload


def glm() -> Roofline:
    plan = make_plan("glm-5.3-flash", available_gib=60, kv_cache_dtype="fp8_e4m3")
    return Roofline.for_plan(plan, get_gpu("h200"))


def test_causal_pairs_count_each_query_keys_up_to_the_cap():
    assert _causal_pairs(0, 4, None) == 1 + 2 + 3 + 4
    assert _causal_pairs(2, 4, None) == 3 + 4
    assert _causal_pairs(0, 4, 2) == 1 + 2 + 2 + 2
    assert _causal_pairs(5, 8, 2) == 3 * 2


def test_one_decode_token_reads_dense_weights_and_top_k_experts():
    r, prof = glm(), compute_profile(load_model("glm-5.3-flash"))
    ctx = 1000
    flops, moved = r.flops_and_bytes(StepWork(decode_contexts=(ctx,)))
    # fp8 checkpoint: 1 B per weight; one token routes to exactly top_k = 8 experts
    weights = prof.dense_params + 42 * 8 * prof.expert_params
    kv = ctx * 11 * 528 + (ctx // 4) * 11 * 132  # latent rows (ctx < top-k) + pooled keys
    assert moved == pytest.approx(weights + kv + 7260 + 2 * 147_619_840, rel=1e-12)
    assert flops == pytest.approx(2 * prof.active_params + 34 * prof.linear_token_flops
                                  + ctx * 11 * 65536 + (ctx // 4) * 11 * 8192, rel=1e-12)


def test_dsa_attends_top_k_keys_and_indexes_all():
    r = glm()
    short, _ = r.flops_and_bytes(StepWork(decode_contexts=(2048,)))
    long, _ = r.flops_and_bytes(StepWork(decode_contexts=(2048 + 4000,)))
    assert long - short == pytest.approx(1000 * 11 * 8192)  # only the indexer grows


def test_prefill_chunk_is_compute_bound_and_decode_memory_bound():
    r = glm()
    eff = r.efficiency
    flops, moved = r.flops_and_bytes(StepWork(prefill_spans=((0, 8192),)))
    assert flops / (r.flops_per_s * eff.flops) > moved / (r.hbm_bytes_per_s * eff.hbm)
    flops, moved = r.flops_and_bytes(StepWork(decode_contexts=(4096,) * 8))
    assert flops / (r.flops_per_s * eff.flops) < moved / (r.hbm_bytes_per_s * eff.hbm)


def test_host_transfer_adds_bytes_over_the_link():
    r = glm()
    base = r.step_ms(StepWork(decode_contexts=(100,)))
    moved = r.step_ms(StepWork(decode_contexts=(100,), transfer_bytes=int(51.2e9)))
    assert moved - base == pytest.approx(1e3 * 51.2e9 / (64e9 * 0.8), abs=1e-5)  # 1,000 ms


@pytest.mark.parametrize(("concurrency", "measured_tpot_ms"), [(1, 6.48), (4, 6.59)])
def test_decode_matches_a_published_vllm_measurement(concurrency, measured_tpot_ms):
    """InferenceBench "concurrency sweep" recipe (yobitelcomm.github.io/bench/recipes/
    concurrency-sweep): Llama-3.1-8B-Instruct, fp16, vLLM 0.21.0 on one H100-80GB-HBM3,
    tpot_p50 6.48 ms at concurrency 1 and 6.59 ms at 4 (short chat prompts, ~1k context
    assumed here). The model's defaults (80 % of HBM bandwidth, 0.5 ms a step) were not fitted
    to it; within 10 % is the check. At concurrency 16 the measurement (10.94 ms) includes
    prefills interleaved with decode, which a decode-only step does not price."""
    r = Roofline.for_plan(make_plan("llama-3.1-8b", gpu="h100"), get_gpu("h100"))
    got = r.step_ms(StepWork(decode_contexts=(1100,) * concurrency))
    assert got == pytest.approx(measured_tpot_ms, rel=0.10)


def test_gpu_without_datasheet_figures_says_how_to_time_by_hand():
    with pytest.raises(GpuError, match="--step-overhead-ms"):
        gpu_perf(get_gpu("RTX PRO 6000"))


def test_efficiency_outside_a_fraction_is_refused():
    with pytest.raises(ValueError, match="--hbm-efficiency 1.5"):
        Efficiency(hbm=1.5).validate()


def test_linear_cost_is_the_old_formula():
    cost = StepCost()
    work = StepWork(prefill_spans=((0, 100), (0, 50)), decode_contexts=(7, 9))
    assert cost.step_ms(work) == round(12.0 + 150 * 0.02 + 2 * 0.06, 6)


def test_ttft_is_the_end_of_the_prefill_step():
    plan = make_plan("glm-5.3-flash", available_gib=60, kv_cache_dtype="fp8_e4m3")
    r = Roofline.for_plan(plan, get_gpu("h200"))
    w = workload(request(0, 0, {1: 1000}, output=3))
    result = simulate(plan, w, SimConfig())
    (rec,) = result.requests
    prefill = r.step_ms(StepWork(prefill_spans=((0, 1000),)))
    assert rec.first_token_ms == pytest.approx(prefill)
    assert result.summary.latency.ttft_ms.p50 == pytest.approx(prefill)
    # two decode steps at contexts 1001 and 1002, taken as one stride priced at its first
    second = r.step_ms(StepWork(decode_contexts=(1001,)))
    assert rec.finished_ms == pytest.approx(prefill + 2 * second)
    assert result.summary.timing.startswith("roofline on H200")
