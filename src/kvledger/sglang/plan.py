"""Plan: the one call from (model, deployment, rule set, memory) to ledgers and capacity.

Memory comes from exactly one of:
- `available_gib`: what SGLang logs as free memory after weights (the slack is
  `(available + weights)·(1 − mem_fraction_static)`, mem_fraction_static defaulting to 1.0);
- `gpu` (a catalogue GPU) and/or `gpu_memory_gib` (its total memory, or any device's): the
  memory free before load is the total less the CUDA context (`memfraction.CUDA_CONTEXT_BYTES`),
  less the weights per rank (estimated from the config, or `weights_gib`);
  mem_fraction_static defaults to SGLang's automatic choice for that GPU and layout
  (`memfraction.auto_mem_fraction_static`).
With neither, the SPEC's worked example is used: 100 GiB available after weights.

>>> p = make_plan(kv_cache_dtype="fp8_e4m3")
>>> p.ledgers.token.total_bytes, p.capacity.state_slots, p.capacity.max_running_requests
(7260, 343, 68)
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kvledger.core.gpus import GPU, get_gpu
from kvledger.core.limits import MAX_COUNT, MAX_GIB, check_number, show_value
from kvledger.core.units import GiB, MiB
from kvledger.model.arch import ModelArch
from kvledger.model.config import DEFAULT_MODEL, load_model
from kvledger.sglang.capacity import (
    CapacityPlan,
    MemoryInput,
    WorkloadCheck,
    check_workload,
    plan_capacity,
)
from kvledger.sglang.deploy import Deployment, KVDtype
from kvledger.sglang.hicache import HostPlan, plan_host
from kvledger.sglang.ledger import (
    Ledger,
    draft_token_ledger,
    request_ledger,
    state_ledger,
    token_ledger,
)
from kvledger.sglang.memfraction import CUDA_CONTEXT_BYTES, MemFraction, auto_mem_fraction_static
from kvledger.sglang.rankweights import weights_ledger
from kvledger.sglang.resolve import CacheLayout, resolve
from kvledger.sglang.rules import DEFAULT_RULES, get_rules

DEFAULT_AVAILABLE_GIB = 100.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Ledgers:
    token: Ledger
    draft_token: Ledger | None
    state: Ledger
    request: Ledger
    weights: Ledger | None = None  # estimated weights per rank (what --gpu subtracts)


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    layout: CacheLayout
    ledgers: Ledgers
    capacity: CapacityPlan
    workload: WorkloadCheck | None
    gpu: GPU | None
    notes: tuple[str, ...]
    host: HostPlan | None = None  # with --enable-hierarchical-cache: host pools, two views
    weights_estimated: bool = False  # the weights ledger's total was subtracted from the GPU
    auto_mem_fraction: MemFraction | None = None  # SGLang's choice, when the flag was unset

    @property
    def model(self) -> ModelArch:
        return self.layout.model


def _gib(flag: str, value: float, *, minimum_exclusive: bool) -> int:
    """A GiB flag in bytes; NaN, infinity and out-of-range values name the flag."""
    return int(check_number(flag, value, low=0, high=MAX_GIB, low_open=minimum_exclusive) * GiB)


def _device(gpu: GPU | None, gpu_memory_gib: float | None) -> tuple[str, int] | None:
    """(name, total bytes as the driver reports them) of the device, if one was named."""
    if gpu_memory_gib is not None:
        total = _gib("--gpu-memory-gib", gpu_memory_gib, minimum_exclusive=True)
        return (gpu.name if gpu else "GPU", total)
    return None if gpu is None else (gpu.name, gpu.memory_bytes)


def _memory(model: ModelArch, dep: Deployment, gpu: GPU | None, available_gib: float | None,
            weights_gib: float | None, gpu_memory_gib: float | None,
            notes: list[str]) -> tuple[MemoryInput, MemFraction | None]:
    fraction = dep.mem_fraction_static
    device = _device(gpu, gpu_memory_gib)
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
        weights = ledger.total_bytes
        notes.append(f"weights per rank estimated from the config: {weights / GiB:,.2f} GiB "
                     "(itemised in the weights ledger); override with --weights-gib")
    auto = None
    if fraction is None:
        auto = auto_mem_fraction_static(
            total / MiB, tp=dep.tp_size, dp=dep.dp_size, dp_attention=dep.enable_dp_attention,
            vit=model.vit_shape if model.is_multimodal else None)
        fraction = auto.fraction
        notes.append(f"--mem-fraction-static not given: SGLang's {auto.derivation()}")
    notes.append(f"free before load = {name} {total:,} B − CUDA context {CUDA_CONTEXT_BYTES:,} B")
    return MemoryInput.gpu(name, total - CUDA_CONTEXT_BYTES, weights, fraction), auto


def make_plan(
    model: str | ModelArch = DEFAULT_MODEL,
    deployment: Deployment | None = None,
    *,
    rules: str = DEFAULT_RULES,
    gpu: str | None = None,
    available_gib: float | None = None,
    weights_gib: float | None = None,
    gpu_memory_gib: float | None = None,
    family: str | None = None,
    requests: int | None = None,
    context_tokens: int | None = None,
    kv_cache_dtype: str | None = None,
    host_state_share: float | None = None,
) -> Plan:
    """Resolve, ledger and plan capacity; errors name the flag or field at fault.

    `host_state_share`: --hicache-state-share, kvledger's what-if split of the host budget
    between state slots and KV (`kvledger.sglang.hicache_share`); needs the host tier."""
    arch = load_model(model, family=family) if isinstance(model, str) else model
    dep = deployment or Deployment()
    if kv_cache_dtype is not None:
        dep = replace(dep, kv_cache_dtype=KVDtype(kv_cache_dtype))
    gpu_spec = get_gpu(gpu) if gpu else None
    blackwell = None if gpu_spec is None else gpu_spec.dsa_auto_kv_fp8
    layout = resolve(arch, dep, get_rules(rules), blackwell=blackwell)
    notes = list(layout.notes)
    memory, auto_fraction = _memory(arch, layout.deployment, gpu_spec, available_gib, weights_gib,
                     gpu_memory_gib, notes)
    capacity = plan_capacity(layout, memory)
    workload = None
    for flag, value in (("--requests", requests), ("--context", context_tokens)):
        if isinstance(value, int) and value > MAX_COUNT:
            raise ValueError(f"{flag} {show_value(value)}: expected a positive integer (at most "
                             f"{MAX_COUNT:,})")
    if requests is not None or context_tokens is not None:
        workload = check_workload(capacity, 1 if requests is None else requests,
                                  layout.context_tokens if context_tokens is None else context_tokens)
    ledgers = Ledgers(token=token_ledger(layout), draft_token=draft_token_ledger(layout),
                      state=state_ledger(layout), request=request_ledger(layout),
                      weights=weights_ledger(arch, layout.deployment))
    host = None
    if host_state_share is not None and not layout.deployment.enable_hierarchical_cache:
        raise ValueError(f"--hicache-state-share {host_state_share!r}: has no effect without "
                         "--enable-hierarchical-cache")
    if layout.deployment.enable_hierarchical_cache:
        host = plan_host(layout, device_tokens=capacity.max_total_tokens,
                         device_state_slots=capacity.state_slots,
                         device_token_pool_bytes=capacity.token_pool_bytes,
                         device_state_pool_bytes=capacity.state_pool_bytes,
                         state_share=host_state_share)
    estimated = (weights_gib is None and ledgers.weights is not None
                 and memory.pre_load_free_bytes - memory.available_bytes
                 == ledgers.weights.total_bytes
                 and _device(gpu_spec, gpu_memory_gib) is not None)
    return Plan(layout=layout, ledgers=ledgers, capacity=capacity, workload=workload,
                gpu=gpu_spec, notes=tuple(notes), host=host, weights_estimated=estimated,
                auto_mem_fraction=auto_fraction)
