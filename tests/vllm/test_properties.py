"""Properties of the vLLM planner and fuzzing of its inputs (Hypothesis)."""

from __future__ import annotations

import contextlib

from hypothesis import given, settings
from hypothesis import strategies as st

from kvledger.core.errors import DeploymentError
from kvledger.logs.check import check_log
from kvledger.logs.lines import LogError
from kvledger.vllm.capacity import KVCacheMemoryError
from kvledger.vllm.deploy import VllmDeployment
from kvledger.vllm.flags import parse_vllm_command
from kvledger.vllm.plan import make_vllm_plan

HYBRIDS = ["qwen3-next-80b-a3b-instruct", "qwen3.5-35b-a3b", "nemotron-h-56b-base-8k",
           "kimi-linear-48b-a3b-instruct", "falcon-h1-0.5b", "llama-3.1-8b", "qwen3-32b"]


@settings(max_examples=80)
@given(model=st.sampled_from(HYBRIDS), tp=st.sampled_from([1, 2, 4, 8]),
       rules=st.sampled_from(["vllm-0.13", "vllm-0.33"]),
       gib=st.floats(min_value=0.5, max_value=120), caching=st.sampled_from([None, False]),
       spec=st.integers(0, 3), eager=st.booleans())
def test_block_pool_conservation(model, tp, rules, gib, caching, spec, eager):
    dep = VllmDeployment(tensor_parallel_size=tp, enable_prefix_caching=caching,
                         num_speculative_tokens=spec, enforce_eager=eager)
    try:
        p = make_vllm_plan(model, dep, rules=rules, available_gib=gib)
    except (KVCacheMemoryError, DeploymentError):
        return
    lay, cap = p.layout, p.capacity
    assert cap.num_blocks * cap.bytes_per_block <= cap.available_bytes
    assert cap.available_bytes < (cap.num_blocks + 1) * cap.bytes_per_block
    assert cap.bytes_per_block == lay.group_size * lay.page_bytes
    assert sum(g.num_layers for g in lay.groups) == lay.model.num_full_layers + (
        lay.model.num_linear_layers if lay.mamba else 0)
    if lay.mamba is not None:
        assert lay.mamba.page_bytes == lay.attention.page_bytes >= lay.mamba.real_page_bytes
        assert lay.block_tokens % lay.alignment.granule_tokens == 0
    assert all(r.total_bytes >= 0 for r in p.ledgers.lost_per_request.rows)
    assert all(r.total_bytes >= 0 for r in p.ledgers.lost_per_rank.rows)
    assert abs(cap.max_concurrency * cap.blocks_per_request - cap.num_blocks) < 1e-6


WORDS = ["vllm", "serve", "m", "-tp", "--tensor-parallel-size", "2", "0", "-1", "x", "1.5",
         "--max-model-len", "128k", "--gpu-memory-utilization", "0.9", "--kv-cache-dtype", "fp8",
         "--block-size", "--enable-prefix-caching", "--no-enable-prefix-caching",
         "--mamba-cache-mode", "align", "--speculative-config", '{"num_speculative_tokens": 2}',
         "{", "--port", "=", "--max-num-seqs=3", "--dtype", "float32", "|", "tee", "--"]


@settings(max_examples=300)
@given(st.lists(st.sampled_from(WORDS), max_size=12))
def test_vllm_command_fuzz_never_crashes(words):
    with contextlib.suppress(DeploymentError):
        parse_vllm_command(words)


LINES = ["Available KV cache memory: 6.01 GiB", "GPU KV cache size: 569,878 tokens",
         "Maximum concurrency for 131,072 tokens per request: 4.35x",
         "Maximum concurrency for 0 tokens per request: 0.00x", "num_gpu_blocks is: 0",
         "Initializing a V1 LLM engine (v0.24.0) with config:", "version 9.9",
         "non-default args: {'max_model_len': 131072, 'kv_cache_dtype': 'fp8'}",
         "non-default args: {'max_model_len': -5}", "non-default args: {broken",
         "Setting attention block size to 2,096 tokens", "Padding mamba page size by 1.00%",
         "KV Cache is allocated. #tokens: 5, KV size: 1.00 GB", "garbage", "",
         "Load weight end. type=X, avail mem=1.00 GB, mem usage=0.00 GB.",
         "max_total_num_tokens=5, x=1, max_running_requests=1, context_len=10, available_gpu_mem=1.00 GB"]


@settings(max_examples=300)
@given(st.lists(st.sampled_from(LINES), max_size=8))
def test_check_log_fuzz_never_crashes(lines):
    with contextlib.suppress(LogError, ValueError):
        check_log("\n".join(lines), model="qwen3.5-35b-a3b")
