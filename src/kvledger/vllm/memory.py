"""The memory vLLM gives the KV cache on one rank (`Worker.determine_available_memory`).

Exactly one source:
1. `--kv-cache-memory-bytes`: used as is (vLLM skips profiling).
2. `--available-gib`: the figure vLLM logs as "Available KV cache memory: X GiB".
3. A GPU: requested = total × gpu_memory_utilization (ceil in 0.33's `request_memory`),
   minus what profiling measures — weights, peak activations, non-torch memory — and, where
   the release does (default since v0.21), the CUDA-graph estimate:

       available = requested − weights − activations − non_torch − cudagraphs

   vLLM measures the last three at boot; kvledger takes them as inputs and says so when they
   are not given.

>>> m = kv_memory(available_gib=44.59)
>>> m.available_bytes, m.source.value
(47878147932, 'Available KV cache memory (logged)')
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from kvledger.core.ledger import LedgerRow
from kvledger.core.limits import MAX_GIB, check_number
from kvledger.core.units import GiB
from kvledger.vllm.rules import VllmRules

if TYPE_CHECKING:
    from kvledger.core.gpus import GPU
    from kvledger.vllm.deploy import VllmDeployment


class MemorySource(Enum):
    LOGGED = "Available KV cache memory (logged)"
    FLAG = "--kv-cache-memory-bytes"
    PROFILE = "gpu_memory_utilization × total − weights − activations − non-torch"


@dataclass(frozen=True, slots=True, kw_only=True)
class KVMemory:
    source: MemorySource
    available_bytes: int
    total_bytes: int | None = None
    utilization: float | None = None
    requested_bytes: int | None = None
    weights_bytes: int = 0
    activation_bytes: int = 0
    non_torch_bytes: int = 0
    cudagraph_bytes: int = 0

    def rows(self) -> tuple[LedgerRow, ...]:
        if self.source is not MemorySource.PROFILE:
            return (LedgerRow(component="available KV cache memory", count=1,
                              unit_bytes=self.available_bytes, detail=self.source.value),)
        assert self.requested_bytes is not None
        return (
            LedgerRow(component="requested (total × utilization)", count=1,
                      unit_bytes=self.requested_bytes,
                      detail=f"{self.total_bytes:,} B × {self.utilization}"),
            LedgerRow(component="weights", count=-1, unit_bytes=self.weights_bytes),
            LedgerRow(component="peak activations", count=-1, unit_bytes=self.activation_bytes),
            LedgerRow(component="non-torch memory", count=-1, unit_bytes=self.non_torch_bytes),
            LedgerRow(component="CUDA-graph estimate", count=-1, unit_bytes=self.cudagraph_bytes),
        )


def _gib(flag: str, value: float, *, positive: bool = False) -> int:
    """A GiB flag in bytes, bounded by the one limits table (as `kvledger.plan` reads its own
    GiB flags): NaN, infinity and absurd sizes name the flag instead of overflowing."""
    return int(check_number(flag, value, low=0, high=MAX_GIB, low_open=positive) * GiB)


def kv_memory(*, available_gib: float | None = None, kv_cache_memory_bytes: int | None = None,
              total_bytes: int | None = None, utilization: float | None = None,
              rules: VllmRules | None = None, weights_bytes: int = 0,
              activation_gib: float | None = None, non_torch_gib: float | None = None,
              cudagraph_gib: float | None = None, notes: list[str] | None = None) -> KVMemory:
    notes = [] if notes is None else notes
    if kv_cache_memory_bytes is not None:
        return KVMemory(source=MemorySource.FLAG, available_bytes=kv_cache_memory_bytes)
    if available_gib is not None:
        return KVMemory(source=MemorySource.LOGGED,
                        available_bytes=_gib("--available-gib", available_gib, positive=True))
    assert total_bytes is not None and utilization is not None and rules is not None
    product = total_bytes * utilization
    requested = math.ceil(product) if rules.requested_memory_ceil else int(product)
    measured = {"--activation-gib": activation_gib, "--non-torch-gib": non_torch_gib}
    if rules.subtracts_cudagraph_estimate:
        measured["--cudagraph-gib"] = cudagraph_gib
    missing = [flag for flag, value in measured.items() if value is None]
    if missing:
        notes.append(f"{', '.join(missing)} not given: taken as 0 (vLLM measures them at boot; "
                     "pass them, or --available-gib from the log, for vLLM's exact figure)")
    activations = _gib("--activation-gib", activation_gib or 0.0)
    non_torch = _gib("--non-torch-gib", non_torch_gib or 0.0)
    graphs = _gib("--cudagraph-gib", cudagraph_gib or 0.0) if rules.subtracts_cudagraph_estimate else 0
    if cudagraph_gib and not rules.subtracts_cudagraph_estimate:
        notes.append(f"--cudagraph-gib ignored: {rules.name} does not subtract CUDA graphs")
    available = requested - weights_bytes - activations - non_torch - graphs
    return KVMemory(source=MemorySource.PROFILE, available_bytes=available,
                    total_bytes=total_bytes, utilization=utilization, requested_bytes=requested,
                    weights_bytes=weights_bytes, activation_bytes=activations,
                    non_torch_bytes=non_torch, cudagraph_bytes=graphs)


def memory_source(available_gib: float | None, dep: VllmDeployment,
                  gpu: GPU | None) -> str | None:
    """The one memory source given (--available-gib, --kv-cache-memory-bytes), else None for
    the GPU's budget; both, or none and no GPU, is an error."""
    sources = [name for name, given in (("--available-gib", available_gib is not None),
                                        ("--kv-cache-memory-bytes",
                                         dep.kv_cache_memory_bytes is not None)) if given]
    if len(sources) > 1:
        raise ValueError(f"{' and '.join(sources)}: give one, not both")
    if not sources and gpu is None:
        raise ValueError("--engine vllm needs --gpu, --available-gib (vLLM's logged "
                         "'Available KV cache memory') or --kv-cache-memory-bytes")
    return sources[0] if sources else None
