"""The memory one rank starts from, from exactly one source (`kvledger.sglang.plan`'s doc):
`--available-gib`, a GPU (`--gpu`, `--gpu-memory-gib`) less its CUDA context and the weights,
or the SPEC's 100 GiB after weights; every default taken is added to the plan's notes.
"""

from __future__ import annotations

from kvledger.core.gpus import GPU
from kvledger.core.limits import MAX_GIB, check_number
from kvledger.core.units import GiB, MiB
from kvledger.model.arch import ModelArch
from kvledger.sglang.capacity import MemoryInput
from kvledger.sglang.cudagraphs import CUDA_DEFAULT, CudaGraphs
from kvledger.sglang.deploy import Deployment
from kvledger.sglang.memfraction import CUDA_CONTEXT_BYTES, MemFraction, auto_mem_fraction_static
from kvledger.sglang.rankweights import weights_ledger

DEFAULT_AVAILABLE_GIB = 100.0


def _gib(flag: str, value: float, *, minimum_exclusive: bool) -> int:
    """A GiB flag in bytes; NaN, infinity and out-of-range values name the flag."""
    return int(check_number(flag, value, low=0, high=MAX_GIB, low_open=minimum_exclusive) * GiB)


def device_memory(gpu: GPU | None, gpu_memory_gib: float | None) -> tuple[str, int] | None:
    """(name, total bytes as the driver reports them) of the device, if one was named."""
    if gpu_memory_gib is not None:
        total = _gib("--gpu-memory-gib", gpu_memory_gib, minimum_exclusive=True)
        return (gpu.name if gpu else "GPU", total)
    return None if gpu is None else (gpu.name, gpu.memory_bytes)


def plan_memory(model: ModelArch, dep: Deployment, gpu: GPU | None, available_gib: float | None,
                weights_gib: float | None, gpu_memory_gib: float | None,
                notes: list[str], *, requests_given: int | None = None,
                cap_max_bs_by_requests: bool = False, graphs: CudaGraphs = CUDA_DEFAULT,
                ) -> tuple[MemoryInput, MemFraction | None]:
    """The rank's memory and SGLang's automatic mem_fraction_static when it chose one;
    `requests_given`: --max-running-requests as given, before the speculative default;
    `graphs`: the CUDA-graph backends whose capture the fraction reserves for."""
    fraction = dep.mem_fraction_static
    device = device_memory(gpu, gpu_memory_gib)
    if device is not None and available_gib is not None:
        given = "--gpu-memory-gib" if gpu is None else "--gpu"
        raise ValueError(f"{given} and --available-gib: give one, not both")
    weights = None if weights_gib is None else _gib("--weights-gib", weights_gib,
                                                     minimum_exclusive=False)
    if device is None:
        if available_gib is None:
            available_gib = DEFAULT_AVAILABLE_GIB
            notes.append(f"no --gpu or --available-gib: assumed {available_gib:g} GiB free after weights")
        available = _gib("--available-gib", available_gib, minimum_exclusive=True)
        return MemoryInput.available(available, weights_bytes=weights or 0,
                                     mem_fraction_static=fraction), None
    name, total = device
    if weights is None:
        ledger = weights_ledger(model, dep)
        if ledger is None:
            raise ValueError(f"{model.name}: weight size unknown; pass --weights-gib")
        weights = ledger.total_bytes // dep.pp_size
        notes.append(f"weights per rank estimated from the config: {weights / GiB:,.2f} GiB "
                     "(itemised in the weights ledger"
                     + (f", split evenly over {dep.pp_size} pipeline stages" if dep.pp_size > 1
                        else "") + "); override with --weights-gib")
    auto = None
    if fraction is None:
        auto = auto_mem_fraction_static(
            total / MiB, tp=dep.tp_size, dp=dep.dp_size, dp_attention=dep.enable_dp_attention,
            vit=model.vit_shape if model.is_multimodal else None, pp=dep.pp_size,
            role=dep.disaggregation_mode, max_running_requests=requests_given,
            draft_tokens=dep.speculative_num_draft_tokens,
            cap_max_bs_by_requests=cap_max_bs_by_requests, graphs=graphs)
        fraction = auto.fraction
        notes.append(f"--mem-fraction-static not given: SGLang's {auto.derivation()}")
    notes.append(f"free before load = {name} {total:,} B − CUDA context {CUDA_CONTEXT_BYTES:,} B")
    return MemoryInput.gpu(name, total - CUDA_CONTEXT_BYTES, weights, fraction), auto
