"""Decode and prefill context parallelism: DCP-sharded blocks, the sizes and backends vLLM takes.

Sources (files under vllm/): v1/kv_cache_interface.py `FullAttentionSpec.max_memory_usage_bytes`
(max_model_len / dcp, MLA inherits it), v1/core/kv_cache_utils.py
`get_max_concurrency_for_kv_cache_config`; config/parallel.py `_validate_parallel_config`;
config/model.py `verify_with_parallel_config`; v1/attention/backend.py
`validate_configuration` ("DCP not supported") and the impls' `supports_dcp`,
`can_return_lse_for_decode`, `supports_pcp`; v1/worker/cp_utils.py
`check_attention_cp_compatibility`; 0.24's `resolve_kv_cache_block_sizes`. Numbers and
refusals are vLLM's own: rows of tests/data/oracle/vllm-{0.33.0,0.24.0}-scale-out.jsonl.
"""

from __future__ import annotations

import pytest

from kvledger.core.errors import DeploymentError
from kvledger.vllm.capacity import KVCacheMemoryError
from kvledger.vllm.deploy import VllmDeployment
from kvledger.vllm.plan import make_vllm_plan


def _plan(model: str, available: int, gpu: str = "H200", rules: str = "vllm-0.33", **deploy):
    return make_vllm_plan(model, VllmDeployment(kv_cache_memory_bytes=available, **deploy),
                          rules=rules, gpu=gpu)


def test_dcp_divides_a_requests_attention_blocks():
    # DeepSeek-V3 at TP 8 on an H200 (FLASH_ATTN_MLA, 16-token blocks of 61 × 18,432 B):
    # 10,244,295,526 B hold 9,111 blocks; a 163,840-token request takes cdiv(81,920, 16) =
    # 5,120 of them under DCP 2. vLLM: "GPU KV cache size: 291,552 tokens, ... 1.78x"
    p = _plan("deepseek-v3", 10_244_295_526, tensor_parallel_size=8,
              decode_context_parallel_size=2)
    cap = p.capacity
    assert (cap.bytes_per_block, cap.num_blocks, cap.blocks_per_request) == (1_124_352, 9_111,
                                                                             5_120)
    assert cap.logged_tokens == 291_552 and f"{cap.max_concurrency:.2f}" == "1.78"
    assert p.totals.ranks == 8  # DCP reuses the TP ranks
    # without DCP the same memory does not hold one request (10,240 blocks of 1.05 MiB)
    with pytest.raises(KVCacheMemoryError, match="to serve at least one request"):
        _plan("deepseek-v3", 10_244_295_526, tensor_parallel_size=8)


def test_dcp_leaves_state_blocks_whole():
    # Qwen3-Next at TP 4, DCP 2: attention cdiv(131,072, 320) = 410 blocks + 3 GDN groups × 3
    # (align: 2 + 1 prefill checkpoint) = 419 (vLLM: 419, 10,697 blocks, 25.53x)
    p = _plan("qwen3-next-80b-a3b-instruct", 42_065_559_206, tensor_parallel_size=4,
              decode_context_parallel_size=2)
    assert p.capacity.blocks_per_request == 410 + 3 * 3 and p.capacity.num_blocks == 10_697
    assert p.capacity.logged_tokens == 6_692_492
    assert p.ledgers.per_request.rows[0].detail == "cdiv(cdiv(262,144, dcp 2), 320)"


def test_pcp_adds_ranks_and_dcp_may_span_them():
    # DeepSeek-V3 at TP 4 × PCP 2 with DCP 8 (= TP × PCP): cdiv(cdiv(163,840, 8), 16) = 1,280
    # blocks a request; vLLM: 38,407 blocks, 4,916,096 tokens
    p = _plan("deepseek-v3", 43_183_053_765, tensor_parallel_size=4,
              prefill_context_parallel_size=2, decode_context_parallel_size=8)
    assert p.capacity.blocks_per_request == 1_280 and p.capacity.logged_tokens == 4_916_096
    assert p.totals.ranks == 8


@pytest.mark.parametrize("model,deploy,message", [
    ("llama-3.1-8b", dict(tensor_parallel_size=8, decode_context_parallel_size=2),
     r"requires `--tensor-parallel-size` \(8\) to be greater than the model's total number "
     r"of KV heads \(8\)"),
    ("qwen3-next-80b-a3b-instruct", dict(tensor_parallel_size=8, decode_context_parallel_size=8),
     r"`--decode-context-parallel-size` \(8\) exceeds the maximum supported value \(4\)"),
    ("deepseek-v3", dict(tensor_parallel_size=4, decode_context_parallel_size=3),
     "tp_size=4 must be divisible by dcp_size=3"),
    ("deepseek-v3", dict(tensor_parallel_size=4, prefill_context_parallel_size=2,
                         decode_context_parallel_size=4),
     r"valid DCP sizes are \[1, 2, 8\]"),
    ("llama-3.1-8b", dict(tensor_parallel_size=2, prefill_context_parallel_size=2),
     "no GQA attention backend supports PCP"),
    ("glm-5.3-flash", dict(tensor_parallel_size=4, prefill_context_parallel_size=2),
     "the state layers' attention backend does not support PCP"),
])
def test_vllm_033_refusals(model, deploy, message):
    with pytest.raises(DeploymentError, match=message):
        _plan(model, 40 * 2**30, **deploy)


def test_dcp_picks_a_backend_that_takes_it():
    # GLM-5.3-Flash on an H200: FLASHINFER_MLA_SPARSE_SM90 has no DCP, so vLLM 0.33's selector
    # takes FLASHMLA_SPARSE (bfloat16; same 1,152-token block at TP 4); with fp8 none is left
    p = _plan("glm-5.3-flash", 40 * 2**30, tensor_parallel_size=4, decode_context_parallel_size=2)
    assert p.layout.mla_backend.name == "FLASHMLA_SPARSE" and p.layout.block_tokens == 1_152
    with pytest.raises(DeploymentError, match="No valid attention backend found: DCP not "
                                              "supported"):
        _plan("glm-5.3-flash", 40 * 2**30, tensor_parallel_size=4,
              decode_context_parallel_size=2, kv_cache_dtype="fp8")


def test_vllm_024_refuses_dcp_where_its_impls_return_no_lse_and_every_hybrid():
    # 0.24's FlashInfer MLA (B200) and every sparse-MLA impl lack can_return_lse_for_decode
    with pytest.raises(DeploymentError, match="FLASHINFER_MLA on SM 10.x, whose impl returns "
                                              "no softmax LSE"):
        _plan("deepseek-v3", 40 * 2**30, gpu="B200", rules="vllm-0.24", tensor_parallel_size=8,
              decode_context_parallel_size=2)
    with pytest.raises(DeploymentError, match="FLASHMLA_SPARSE on SM 9.x"):
        _plan("deepseek-v3.2", 40 * 2**30, rules="vllm-0.24", tensor_parallel_size=8,
              decode_context_parallel_size=4)
    # FLASH_ATTN_MLA (H200) has it: 0.24 plans DeepSeek-V3 under DCP as 0.33 does
    ok = _plan("deepseek-v3", 10_244_295_526, rules="vllm-0.24", tensor_parallel_size=8,
               decode_context_parallel_size=2)
    assert (ok.capacity.num_blocks, ok.capacity.logged_tokens) == (9_111, 291_552)
    with pytest.raises(DeploymentError, match="Hybrid KV cache groups with multiple block "
                                              "sizes do not support context parallelism"):
        _plan("qwen3-next-80b-a3b-instruct", 40 * 2**30, rules="vllm-0.24",
              tensor_parallel_size=4, decode_context_parallel_size=2)
    with pytest.raises(DeploymentError, match="no attention backend of the release supports"):
        _plan("deepseek-v3", 40 * 2**30, rules="vllm-0.24", tensor_parallel_size=4,
              prefill_context_parallel_size=2)


def test_rule_sets_not_read_for_context_parallelism_refuse_it():
    with pytest.raises(DeploymentError, match="rule set vllm-0.32 does not model context "
                                              "parallelism"):
        _plan("deepseek-v3", 40 * 2**30, rules="vllm-0.32", tensor_parallel_size=8,
              decode_context_parallel_size=2)
