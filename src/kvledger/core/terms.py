"""MemoryTerms: the memory figures a user may know better than kvledger's defaults.

Each engine reads the terms it has and every command takes them alike (plan, sweep, compare,
recommend, the Python API); a term left None is the engine's default or kvledger's estimate,
and the plan says so in its notes.

- `weights_gib`: weights per rank (both engines; default: estimated from the config);
- `available_gib`: the figure the engine logs — SGLang: free memory after weights; vLLM:
  "Available KV cache memory" (not the same figure: the two never share one value);
- vLLM's profiled terms, which it measures at boot: `activation_gib` (peak activations),
  `non_torch_gib` (NCCL, CUDA context), `cudagraph_gib` (the CUDA-graph estimate, subtracted
  where the rule set says so: `VllmRules.subtracts_cudagraph_estimate`), its budget
  `gpu_memory_utilization`, and `kv_cache_memory_bytes` (vLLM's --kv-cache-memory-bytes: the KV
  cache's bytes per rank, profiling skipped). SGLang has no such terms: its
  (1 − mem_fraction_static) slack covers activations and graphs, and --mem-fraction-static is
  one of its launch flags.

>>> MemoryTerms(activation_gib=2.5).given()
('--activation-gib',)
>>> MemoryTerms(activation_gib=2.5).unread_by({"weights_gib"})
('--activation-gib',)
>>> MemoryTerms(gpu_memory_utilization=1.5)
Traceback (most recent call last):
...
ValueError: --gpu-memory-utilization 1.5: expected a finite number in (0, 1]
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from kvledger.core.limits import MAX_GIB, check_number

# (flag range) of each term: GiB in [0, MAX_GIB] (available memory: > 0), utilization (0, 1]
_RANGE = {"available_gib": (0.0, MAX_GIB, True), "gpu_memory_utilization": (0.0, 1.0, True),
          "kv_cache_memory_bytes": (0.0, MAX_GIB * 2**30, True)}


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryTerms:
    weights_gib: float | None = None
    available_gib: float | None = None
    activation_gib: float | None = None
    non_torch_gib: float | None = None
    cudagraph_gib: float | None = None
    gpu_memory_utilization: float | None = None
    kv_cache_memory_bytes: int | None = None

    def __post_init__(self) -> None:
        """Every term given is a finite number in its range; else one error naming its flag
        (before any engine plans with it)."""
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None:
                low, high, low_open = _RANGE.get(f.name, (0.0, MAX_GIB, False))
                check_number(_flag(f.name), value, low=low, high=high, low_open=low_open)

    def given(self) -> tuple[str, ...]:
        """The flags of the terms set, as the command line spells them."""
        return tuple(_flag(f.name) for f in fields(self) if getattr(self, f.name) is not None)

    def unread_by(self, read: set[str] | frozenset[str]) -> tuple[str, ...]:
        """The flags set whose term no field name in `read` covers."""
        return tuple(_flag(f.name) for f in fields(self)
                     if getattr(self, f.name) is not None and f.name not in read)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")
