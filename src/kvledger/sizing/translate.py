"""The same workload on the other engine: map the flags both engines share.

For a side-by-side plan kvledger carries over only what means the same thing to both:
tensor and pipeline parallelism, decode context parallelism (both shard each request's tokens
over the TP ranks, `tp % dcp == 0`), the context length, the KV dtype (fp8 ↔ fp8_e4m3), the state dtype, the
request limit and whether prefix caching is on. Everything else takes the other engine's
defaults, and the report says so.

>>> from kvledger.sglang.deploy import Deployment, KVDtype
>>> v = vllm_from_sglang(Deployment(tp_size=2, kv_cache_dtype=KVDtype.FP8_E4M3))
>>> v.tensor_parallel_size, v.kv_cache_dtype
(2, 'fp8_e4m3')
>>> sglang_from_vllm(VllmDeployment(tensor_parallel_size=4, max_model_len=65536)).context_length
65536
"""

from __future__ import annotations

from kvledger.sglang.deploy import Deployment, KVDtype, StateDtype
from kvledger.vllm.deploy import VllmDeployment


def vllm_from_sglang(dep: Deployment) -> VllmDeployment:
    kv = {KVDtype.AUTO: "auto", KVDtype.BF16: "bfloat16", KVDtype.FP8_E4M3: "fp8_e4m3"}
    return VllmDeployment(
        tensor_parallel_size=dep.tp_size,
        pipeline_parallel_size=dep.pp_size,
        decode_context_parallel_size=dep.dcp_size,
        max_model_len=dep.context_length,
        max_num_seqs=dep.max_running_requests,
        kv_cache_dtype=kv[dep.kv_cache_dtype],
        mamba_ssm_cache_dtype=dep.mamba_ssm_dtype.value if dep.mamba_ssm_dtype else "auto",
        enable_prefix_caching=False if dep.disable_radix_cache else None,
    )


def sglang_from_vllm(dep: VllmDeployment) -> Deployment:
    kv = KVDtype.AUTO if dep.kv_cache_dtype == "auto" else (
        KVDtype.BF16 if dep.kv_cache_dtype == "bfloat16" else KVDtype.FP8_E4M3)
    ssm = None if dep.mamba_ssm_cache_dtype == "auto" else StateDtype(dep.mamba_ssm_cache_dtype)
    return Deployment(tp_size=dep.tensor_parallel_size, pp_size=dep.pipeline_parallel_size,
                      dcp_size=dep.decode_context_parallel_size,
                      context_length=dep.max_model_len,
                      max_running_requests=dep.max_num_seqs, kv_cache_dtype=kv,
                      mamba_ssm_dtype=ssm, disable_radix_cache=dep.enable_prefix_caching is False)
