"""The MLA backend vLLM 0.33 picks per GPU and what it does to blocks and rows.

Sources: vllm/platforms/cuda.py `_get_backend_priorities`; each backend's
`get_supported_kernel_block_sizes` / `customize_spec` under v1/attention/backends/mla/;
`_canonicalize_sparse_mla_kv_cache_dtype` (model_executor/layers/attention/mla_attention.py);
`GlmMoeDsaForCausalLM.verify_and_update_config` (model_executor/models/config.py). Every
number below is also what vLLM 0.33.0's own planning answered on the pretended GPU
(tests/data/oracle/vllm-0.33.0-grid.jsonl, the row named in each test).
"""

from __future__ import annotations

import pytest

from kvledger.core.errors import DeploymentError
from kvledger.vllm.deploy import VllmDeployment
from kvledger.vllm.plan import make_vllm_plan


def plan(model, gpu, available, **kw):
    return make_vllm_plan(model, VllmDeployment(kv_cache_memory_bytes=available, **kw),
                          rules="vllm-0.33", gpu=gpu)


@pytest.mark.parametrize("gpu,dtype,backend,block", [
    ("B200", "auto", "FLASHINFER_MLA", 32),  # kernel blocks [32, 64]: 16 is not one
    ("H200", "auto", "FLASH_ATTN_MLA", 16),  # MultipleOf(16)
    ("H200", "fp8", "FLASHMLA", 64),  # FlashAttention's MLA takes no fp8 KV
    ("A100 80GB", "auto", "TRITON_MLA", 16),
    ("RTX PRO 6000", "fp8", "TRITON_MLA", 16),
])
def test_dense_mla_block_is_the_backends(gpu, dtype, backend, block):
    p = plan("deepseek-v3", gpu, 34_124_519_846, tensor_parallel_size=8, kv_cache_dtype=dtype)
    assert p.layout.mla_backend.name == backend and p.layout.block_tokens == block


def test_deepseek_v3_on_b200_matches_vllm():
    # row deepseek-v3|B200|auto|pc=None|spec=0|tp=8: 61 layers × 32 × 576 × 2 B per block
    p = plan("deepseek-v3", "B200", 34_124_519_846, tensor_parallel_size=8)
    assert p.capacity.bytes_per_block == 61 * 32 * 1152 == 2_248_704
    assert p.capacity.num_blocks == 34_124_519_846 // 2_248_704 == 15_175


def test_sparse_mla_needs_sm90():
    # row deepseek-v3.2|L40S|…: "No valid attention backend found"
    with pytest.raises(DeploymentError, match="no sparse MLA attention backend for SM 8.x"):
        plan("deepseek-v3.2", "L40S", 14_343_586_515, tensor_parallel_size=8)


def test_sm120_stores_auto_as_fp8_ds_mla():
    # row deepseek-v3.2|RTX PRO 6000|auto|pc=None|spec=0|tp=8: FLASHINFER_MLA_SPARSE_SM120
    # makes auto fp8_ds_mla: 61 × 64 × 656 + 61 × 64 × 132 (indexer) per block
    p = plan("deepseek-v3.2", "RTX PRO 6000", 29_634_830_925, tensor_parallel_size=8)
    assert p.capacity.bytes_per_block == 61 * 64 * 656 + 61 * 64 * 132 == 3_076_352
    assert p.capacity.num_blocks == 9_633


def test_glm52_auto_kv_is_fp8_on_sm100():
    # row glm-5.2|B200|auto|…|tp=8: cache_dtype fp8_e4m3, FLASHINFER_MLA_SPARSE keeps the raw
    # 576 B row; the 1,048,576-token request does not fit the 23.79 GiB
    with pytest.raises(DeploymentError, match="to serve at least one request"):
        plan("glm-5.2", "B200", 25_545_504_910, tensor_parallel_size=8)
    p = plan("glm-5.2", "B200", 25_545_504_910, tensor_parallel_size=8, max_model_len=65_536)
    assert p.deployment.kv_cache_dtype == "fp8_e4m3"
    assert p.layout.attention.bytes_per_token == 576 and not p.layout.attention.fp8_ds_mla
    assert any("SM10x" in n for n in p.notes)
