"""vLLM's memory terms as options: its profiled activations, non-torch memory and CUDA graphs,
and its budget, declared once for `plan` (in `EngineInputs`) and for `sweep`, `compare` and
`recommend` (the `VllmTerms` group). What they mean: `kvledger.core.terms.MemoryTerms`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import typer

from kvledger.core.terms import MemoryTerms

ActivationOpt = Annotated[float | None, typer.Option(
    "--activation-gib", help="vLLM: peak activation memory per rank (GiB), as profiling finds it "
    "(default 0, said in the notes).")]
NonTorchOpt = Annotated[float | None, typer.Option(
    "--non-torch-gib", help="vLLM: non-torch memory per rank (GiB): NCCL, CUDA context "
    "(default 0).")]
CudagraphOpt = Annotated[float | None, typer.Option(
    "--cudagraph-gib", help="vLLM: CUDA-graph memory estimate per rank (GiB), subtracted under "
    "the rule sets whose release does (vllm-0.24 and later; not vllm-0.13) (default 0).")]
UtilizationOpt = Annotated[float | None, typer.Option(
    "--gpu-memory-utilization", help="vLLM: the share (0-1] of GPU memory vLLM may use "
    "(default: the rule set's, 0.9 or 0.92).")]

KvCacheBytesOpt = Annotated[int | None, typer.Option(
    "--kv-cache-memory-bytes", help="vLLM: the KV cache's bytes per rank, as vLLM's own flag "
    "sets them (profiling skipped; the GPU's budget is not used).")]


@dataclass(frozen=True, slots=True)
class VllmTerms:
    """vLLM's profiled memory terms, for the commands that plan vLLM's layouts among others."""

    activation_gib: ActivationOpt = None
    non_torch_gib: NonTorchOpt = None
    cudagraph_gib: CudagraphOpt = None
    gpu_memory_utilization: UtilizationOpt = None
    kv_cache_memory_bytes: KvCacheBytesOpt = None

    def terms(self, *, weights_gib: float | None = None,
              available_gib: float | None = None) -> MemoryTerms:
        return MemoryTerms(weights_gib=weights_gib, available_gib=available_gib,
                           activation_gib=self.activation_gib, non_torch_gib=self.non_torch_gib,
                           cudagraph_gib=self.cudagraph_gib,
                           gpu_memory_utilization=self.gpu_memory_utilization,
                           kv_cache_memory_bytes=self.kv_cache_memory_bytes)
