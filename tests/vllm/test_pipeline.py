"""A pipeline-parallel vLLM engine: per-stage pools unified to the smallest, totals, refusals.

vLLM 0.33.0's `get_kv_cache_configs` (v1/core/kv_cache_planning.py): the admission check per
worker, available // the worker's bytes per block, then "Change the num_blocks of each rank to
the smallest among all ranks"; `get_kv_cache_capacity` (v1/core/kv_cache_utils.py) logs
int(num_blocks / blocks per request × max_model_len). Each deployment's memory and numbers are
a row of tests/data/oracle/vllm-0.33.0-scale-out.jsonl (vLLM's own planning, pretended H200).
"""

from __future__ import annotations

import pytest

from kvledger.core.errors import DeploymentError
from kvledger.vllm.capacity import KVCacheMemoryError
from kvledger.vllm.deploy import VllmDeployment
from kvledger.vllm.plan import make_vllm_plan


def _plan(model: str, available: int, rules: str = "vllm-0.33", **deploy):
    return make_vllm_plan(model, VllmDeployment(kv_cache_memory_bytes=available, **deploy),
                          rules=rules, gpu="H200")


def test_llama_over_three_stages_gets_the_wider_stages_count():
    # 11/11/10 layers of 32,768-B pages (16 tokens × 4 KV heads × 2 × 128 × 2 B at TP 2)
    p = _plan("llama-3.1-8b", 53_491_345_887, tensor_parallel_size=2, pipeline_parallel_size=3)
    pipe = p.pipeline
    assert [s.capacity.bytes_per_block for s in pipe.stages] == [360_448, 360_448, 327_680]
    assert [s.capacity.own_num_blocks for s in pipe.stages] == [148_402, 148_402, 163_242]
    assert pipe.num_blocks == p.capacity.num_blocks == 148_402  # vLLM: 148,402
    assert pipe.binding_stage == 0 and p.layout.stage.pp_rank == 0
    # vLLM logs "GPU KV cache size: 2,374,432 tokens, ... 18.12x"
    assert p.capacity.logged_tokens == 2_374_432
    assert f"{p.capacity.max_concurrency:.2f}" == "18.12"
    # the narrow stage leaves 14,840 blocks of its memory unallocated
    last = pipe.stages[2].capacity
    assert last.trimmed_blocks == 163_242 - 148_402 == 14_840


def test_the_binding_stage_is_the_widest_and_carries_the_ledgers():
    # DeepSeek-V3.2 at TP 4 over 15/15/16/15 layers: stage 2's 16 latent + indexer pages
    # (1,314,816 B) bind at 37,026 blocks (vLLM: 37,026; 2,369,664 tokens, 14.46x)
    p = _plan("deepseek-v3.2", 48_682_400_834, tensor_parallel_size=4, pipeline_parallel_size=4)
    assert p.pipeline.binding_stage == 2
    assert p.capacity.bytes_per_block == 1_314_816 and p.capacity.num_blocks == 37_026
    assert p.capacity.logged_tokens == 2_369_664
    assert p.ledgers.per_block.total_bytes == 1_314_816
    # the binding stage leaves nothing unallocated; stage 0 leaves 39,494 − 37,026 blocks
    assert "blocks past the smallest stage's count" not in {
        r.component for r in p.ledgers.lost_per_rank.rows}
    assert p.pipeline.stages[0].capacity.trimmed_blocks == 39_494 - 37_026
    assert any("stage PP2's (layers 30..45)" in n for n in p.notes)


def test_glm_5_3_flash_two_stages():
    # vLLM: stage 0 alone 4,570 blocks of 6,116,352 B, stage 1 3,812 of 7,332,864 B; 3,812
    # for both, 924 blocks a request, 4,325,943 tokens (4.13x)
    p = _plan("glm-5.3-flash", 27_955_833_582, tensor_parallel_size=4, pipeline_parallel_size=2)
    assert [s.capacity.own_num_blocks for s in p.pipeline.stages] == [4_570, 3_812]
    assert p.capacity.num_blocks == 3_812 and p.capacity.blocks_per_request == 924
    assert p.capacity.logged_tokens == 4_325_943


def test_totals_add_every_stages_pool():
    p = _plan("llama-3.1-8b", 53_491_345_887, tensor_parallel_size=2, pipeline_parallel_size=3,
              data_parallel_size=2)
    t = p.totals
    assert t.ranks == 2 * 3 * 2 and t.workers == 2
    per_engine = 148_402 * (360_448 + 360_448 + 327_680)
    assert t.token_pool_bytes == per_engine * 2 * 2  # × TP ranks × DP engines
    assert t.tokens == 2 * 2_374_432


def test_a_stage_that_cannot_hold_one_request_is_named():
    # 1.5 GB: stage 0 (11 layers) needs 360,448 × 8,192 B ≈ 2.75 GiB for one 131,072-token request
    with pytest.raises(KVCacheMemoryError, match=r"pipeline stage 0 \(layers 0\.\.10\): "
                                                 r"--max-model-len 131072: to serve"):
        _plan("llama-3.1-8b", 1_500_000_000, tensor_parallel_size=2, pipeline_parallel_size=3)


def test_rule_sets_not_read_for_pipelines_refuse_them():
    with pytest.raises(DeploymentError, match="rule set vllm-0.13 does not model pipeline "
                                              r"parallelism \(read for vllm-0.24 and vllm-0.33\)"):
        _plan("llama-3.1-8b", 20 * 2**30, rules="vllm-0.13", pipeline_parallel_size=2)
    with pytest.raises(DeploymentError, match="llama-3.1-8b has only 32 decoder layers"):
        _plan("llama-3.1-8b", 20 * 2**30, pipeline_parallel_size=33)


def test_gpu_budget_splits_the_weights_over_the_stages():
    p = make_vllm_plan("llama-3.1-8b", VllmDeployment(tensor_parallel_size=2,
                                                       pipeline_parallel_size=2), gpu="H200")
    assert p.memory.weights_bytes == p.model.weight_bytes // (2 * 2)
    assert any("split evenly over 2 stages" in n for n in p.notes)
