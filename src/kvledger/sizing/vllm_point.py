"""A sweep point planned with vLLM's rules: the same GPUs, vLLM's flags, vLLM's own totals.

Mapping (the flags both engines share, `kvledger.sizing.translate`, plus the layout):
- SGLang `--tp T` alone → `--tensor-parallel-size T` (T GPUs, one engine);
- SGLang `--tp T --dp D --enable-dp-attention` (T GPUs, D attention workers) → vLLM's
  `--tensor-parallel-size T/D --data-parallel-size D` on the same T GPUs: D engines, each
  with its own block pool (vllm/v1/engine/core.py: one EngineCore and KV cache per DP rank).
  kvledger's vLLM planner does not model expert parallelism, so each DP rank holds the
  weights of a T/D-way tensor-parallel replica (`make_vllm_plan`'s estimate), which a note
  says;
- SGLang `--tp T --dp R` without DP attention (R replicas, T × R GPUs) →
  `--tensor-parallel-size T --data-parallel-size R`;
- `--context C` (a workload) → `--max-model-len C`: vLLM sizes concurrency for requests of
  max_model_len tokens.

Totals (deployment-wide, as `CapacityPlan.totals` for SGLang):
- GPUs = tensor_parallel_size × data_parallel_size;
- running requests = DP × min(max_num_seqs, ⌊max_concurrency⌋), max_concurrency =
  num_gpu_blocks / blocks per max_model_len request
  (`get_max_concurrency_for_kv_cache_config`, vllm/v1/core/kv_cache_utils.py);
- tokens = DP × the logged "GPU KV cache size" (the rule set's formula);
- token_pool_bytes = num_gpu_blocks × bytes per block × GPUs: vLLM's one block pool, which
  attention pages and Mamba states share (no separate state pool: state_pool_bytes = 0).

>>> from kvledger.sglang.deploy import Deployment
>>> v = vllm_deployment(Deployment(tp_size=8, dp_size=4, enable_dp_attention=True), 32_768)
>>> v.tensor_parallel_size, v.data_parallel_size, v.max_model_len
(2, 4, 32768)
"""

from __future__ import annotations

from dataclasses import replace

from kvledger.sglang.capacity import DeploymentTotals
from kvledger.sglang.deploy import Deployment
from kvledger.sizing.translate import vllm_from_sglang
from kvledger.vllm.deploy import VllmDeployment
from kvledger.vllm.plan import VllmPlan

EP_NOTE = ("vLLM rows: --data-parallel-size ranks are independent engines; expert "
           "parallelism is not modelled, so each holds a tensor-parallel replica's weights")


def vllm_deployment(dep: Deployment, context_tokens: int | None = None) -> VllmDeployment:
    """The vLLM flags for the SGLang point `dep` on the same GPUs (module doc)."""
    vdep = vllm_from_sglang(dep)
    if dep.enable_dp_attention:
        fields = {"tensor_parallel_size": dep.attn_tp_size * dep.attn_cp_size,
                  "data_parallel_size": dep.attn_dp_size}
    else:  # replicas of the whole tp group
        fields = {"tensor_parallel_size": dep.tp_size, "data_parallel_size": dep.dp_size}
    if context_tokens is not None:
        fields["max_model_len"] = context_tokens
    return replace(vdep, **fields)


def running_requests_per_engine(plan: VllmPlan) -> int:
    cap = plan.capacity
    return min(cap.max_num_seqs, int(cap.max_concurrency))


def vllm_totals(plan: VllmPlan) -> DeploymentTotals:
    dep, cap = plan.layout.deployment, plan.capacity
    dp = dep.data_parallel_size
    ranks = dep.tensor_parallel_size * dp
    return DeploymentTotals(
        ranks=ranks, workers=dp,
        running_requests=dp * running_requests_per_engine(plan),
        tokens=dp * cap.logged_tokens,
        token_pool_bytes=cap.num_blocks * cap.bytes_per_block * ranks,
        state_pool_bytes=0, verify_bytes=0, side_bytes=0)


def vllm_binding(plan: VllmPlan) -> str:
    """A machine code: `kv_blocks` (the block pool caps concurrency) or `max_num_seqs`."""
    cap = plan.capacity
    return "max_num_seqs" if cap.max_num_seqs < cap.max_concurrency else "kv_blocks"


def vllm_fits(plan: VllmPlan, requests: int | None, context_tokens: int | None) -> bool | None:
    """`requests` concurrent requests of max_model_len (= `context_tokens`) tokens fit over
    all DP ranks; None without a workload. A plan that exists already holds one request of
    max_model_len (vLLM refuses to start otherwise)."""
    if requests is None and context_tokens is None:
        return None
    return requests is None or vllm_totals(plan).running_requests >= requests
