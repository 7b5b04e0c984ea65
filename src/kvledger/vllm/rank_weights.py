"""The weights one rank holds, which a GPU's memory budget loses before the KV cache.

Given (--weights-gib, what vLLM logs as "Model loading took X GiB"), else estimated from the
config: the weights split evenly over the TP ranks and pipeline stages (a simplification: the
embeddings sit on the first stage, the final norm and lm_head on the last; PCP ranks each hold
a TP shard). Refused when they leave nothing of total × gpu_memory_utilization.
"""

from __future__ import annotations

from kvledger.core.gpus import GPU
from kvledger.core.units import GiB
from kvledger.model.arch import ModelArch
from kvledger.vllm.deploy import VllmDeployment
from kvledger.vllm.layout import VllmLayout


def gpu_weights(arch: ModelArch, lay: VllmLayout, gpu: GPU, weights_gib: float | None,
                given: VllmDeployment, notes: list[str]) -> int:
    """Weights per rank on the GPU's budget (given, else the config's estimate), checked
    against total × gpu_memory_utilization; each default taken is noted."""
    dep = lay.deployment
    if weights_gib is not None:
        if not weights_gib >= 0:
            raise ValueError(f"--weights-gib {weights_gib:g}: expected a non-negative number")
        weights = int(weights_gib * GiB)
    elif arch.weight_bytes is None:
        raise ValueError(f"{arch.name}: weight size unknown; pass --weights-gib")
    else:
        weights = arch.weight_bytes // (dep.tensor_parallel_size * dep.pipeline_parallel_size)
        notes.append(f"weights estimated from the config: {weights / GiB:,.2f} GiB per rank"
                     + (f" (split evenly over {dep.pipeline_parallel_size} stages)"
                        if dep.pipeline_parallel_size > 1 else "")
                     + "; override with --weights-gib (vLLM logs 'Model loading took X GiB')")
    if given.gpu_memory_utilization is None:
        notes.append(f"--gpu-memory-utilization not given: {lay.rules.name}'s default "
                     f"{dep.gpu_memory_utilization:g}")
    budget = gpu.memory_bytes * dep.gpu_memory_utilization
    if weights >= budget:
        raise ValueError(
            f"weights of {weights / GiB:,.2f} GiB per rank do not fit in "
            f"--gpu-memory-utilization {dep.gpu_memory_utilization:g} × "
            f"{gpu.name}'s {gpu.memory_bytes / GiB:,.2f} GiB "
            f"({budget / GiB:,.2f} GiB); raise --tensor-parallel-size or pass --weights-gib")
    return weights
