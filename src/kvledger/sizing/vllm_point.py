"""A sweep point planned with vLLM's rules: the same GPUs in vLLM's flags.

Mapping (the flags both engines share, `kvledger.sizing.translate`, plus the layout):
- SGLang `--tp T` alone → `--tensor-parallel-size T` (T GPUs, one engine);
- SGLang `--tp T --dp D --enable-dp-attention` (T GPUs, D attention workers) → vLLM's
  `--tensor-parallel-size T/D --data-parallel-size D` on the same T GPUs: D engines, each
  with its own block pool (vllm/v1/engine/core.py: one EngineCore and KV cache per DP rank).
  kvledger's vLLM planner does not model expert parallelism, so each DP rank holds the
  weights of a T/D-way tensor-parallel replica (`make_vllm_plan`'s estimate), which a note
  (`EP_NOTE`) says;
- SGLang `--tp T --dp R` without DP attention (R replicas, T × R GPUs) →
  `--tensor-parallel-size T --data-parallel-size R`;
- SGLang `--disaggregation-mode prefill|decode` → the same engine (`ROLE_NOTE`);
- `--context C` (a workload) → `--max-model-len C`: vLLM sizes concurrency for requests of
  max_model_len tokens.

The deployment-wide totals are the plan's own (`kvledger.vllm.plan.VllmPlan.totals`).

>>> from kvledger.sglang.deploy import Deployment
>>> v = vllm_deployment(Deployment(tp_size=8, dp_size=4, enable_dp_attention=True), 32_768)
>>> v.tensor_parallel_size, v.data_parallel_size, v.max_model_len
(2, 4, 32768)
"""

from __future__ import annotations

from dataclasses import replace

from kvledger.sglang.deploy import Deployment
from kvledger.sizing.translate import vllm_from_sglang
from kvledger.vllm.deploy import VllmDeployment

# vLLM runs a prefill/decode pair as two engines with a KV connector (--kv-transfer-config);
# kvledger's vLLM rules size each as an aggregated engine and do not model the connector.
ROLE_NOTE = ("vLLM rows: a prefill or decode role is planned as an aggregated engine (a KV "
             "connector pair; the connector's buffers are not modelled)")
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
