"""The workload and simulation options of `simulate`, `figures` and `report`: one schema.

Each option's default is the simulator's own (`SimConfig`, `StepCost`, `Efficiency`), and
`SimInputs.check` bounds every value before any work starts (`cli.bounds`, for callers that
build the inputs themselves; the command line has checked them once already).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kvledger.cache.policies.choice import StateAdmission, StateEviction
from kvledger.cache.policies.lossy_states import LossyCheckpoints
from kvledger.cli.bounds import check_option
from kvledger.core.inputs import check_regular
from kvledger.core.limits import MAX_GENERATED_REQUESTS, check_int, check_number
from kvledger.host.policy import BackupPolicy
from kvledger.host.state_backup import HostStateBackup
from kvledger.sim.config import DEFAULT_TIME_GPU, SimConfig, StepCost
from kvledger.sim.l3 import L3Config
from kvledger.sim.timing import Efficiency
from kvledger.store.backend import BackendKind

if TYPE_CHECKING:
    from kvledger.sglang.plan import SglangPlan

SIM_DEFAULTS, COST_DEFAULTS = SimConfig(), StepCost()  # flag defaults are the dataclasses' own
EFF_DEFAULTS = Efficiency()

TraceOpt = Annotated[Path | None, typer.Option(
    "--trace", help="Mooncake FAST'25 JSONL trace (timestamp, input_length, output_length, "
    "hash_ids).", exists=True, dir_okay=False)]
WorkloadOpt = Annotated[str | None, typer.Option(
    "--workload", help="Generated workload: chat, agent, shared-prompt, zipf, tool-use or "
    "long-doc-qa.")]
NumOpt = Annotated[int | None, typer.Option(
    "--num-requests", help="Generated requests (default 1,000), or the first N of a trace.")]
SeedOpt = Annotated[int, typer.Option("--seed", help="Generator seed.")]
RateOpt = Annotated[float | None, typer.Option(
    "--rate", help="Generated sessions (or requests) started per second (default 1).")]
ScaleOpt = Annotated[float, typer.Option(
    "--time-scale", help="Stretch arrival times by this factor (2 = half the request rate).")]
ChunkOpt = Annotated[int, typer.Option(
    "--chunked-prefill-size", help="Prefill tokens per step (SGLang's flag of that name).")]
TrackOpt = Annotated[int, typer.Option(
    "--mamba-track-interval", help="Decode tokens between state checkpoints (SGLang's flag).")]
OverheadOpt = Annotated[float | None, typer.Option(
    "--step-overhead-ms", help="Linear step-time model instead of the roofline: fixed cost "
    f"of one forward pass (ms, default {COST_DEFAULTS.overhead_ms:g}).")]
PrefillCostOpt = Annotated[float | None, typer.Option(
    "--prefill-ms-per-token", help="Linear step-time model: cost per prefill token (ms, "
    f"default {COST_DEFAULTS.prefill_ms_per_token:g}).")]
DecodeCostOpt = Annotated[float | None, typer.Option(
    "--decode-ms-per-token", help="Linear step-time model: cost per decoded token (ms, "
    f"default {COST_DEFAULTS.decode_ms_per_token:g}).")]
AdmissionOpt = Annotated[StateAdmission, typer.Option(
    "--state-admission", help="Which linear-attention states enter the prefix cache: engine "
    "(SGLang's: every chunk end and finish), marconi (branch points + last decoded token), "
    "reuse-filtered (only prefixes seen before), ghost-branch (branch points found in a "
    "ghost table; finish states while they are reused), segment-branch (ghost-branch plus the "
    "state at the prompt's last segment boundary, the segment learned from the trace), "
    "queue-branch (ghost-branch plus the point where a waiting request will branch). All "
    "lossless.")]
EvictionOpt = Annotated[StateEviction, typer.Option(
    "--state-eviction", help="Which cached state leaves first: lru (SGLang's), flop-aware "
    "(FLOPs saved per byte blended with recency, the blend tuned online), keep-junctions, "
    "spent-first (states a request already resumed from, junctions excepted, go first; then "
    "LRU), spent-first-flop-aware (then FLOP-aware), hit-density (least reuses per slot-time "
    "at the state's age, learned from the trace), spent-first-density, queue-aware (states no "
    "waiting request will resume from first, in flop-aware's order; then the needed ones by "
    "pages saved per queue distance, least first: Belady's rule over the waiting queue, "
    "weighted).")]
TimeGpuOpt = Annotated[str | None, typer.Option(
    "--time-gpu", help="GPU whose peak FLOP/s, HBM and host-link bandwidth time the steps "
    f"(default: --gpu, else {DEFAULT_TIME_GPU}).")]
FlopsEffOpt = Annotated[float, typer.Option(
    "--flops-efficiency", help="Roofline: fraction of peak FLOP/s the kernels reach.")]
HbmEffOpt = Annotated[float, typer.Option(
    "--hbm-efficiency", help="Roofline: fraction of peak HBM bandwidth the kernels reach.")]
RooflineOverheadOpt = Annotated[float, typer.Option(
    "--roofline-overhead-ms", help="Roofline: fixed cost of one step (ms).")]
WritePolicyOpt = Annotated[BackupPolicy | None, typer.Option(
    "--hicache-write-policy", help="Host tier write policy (SGLang's flag; default "
    f"{SIM_DEFAULTS.hicache_write_policy.value}); needs --enable-hierarchical-cache.")]
StateBackupOpt = Annotated[HostStateBackup | None, typer.Option(
    "--host-state-backup", help="Which states get host room with their KV: all (SGLang's, "
    "the default), junctions (kvledger's: leaves and junctions always, a pass-through state "
    "only into a free host slot). Lossless; needs --enable-hierarchical-cache.")]
L3SizeOpt = Annotated[float | None, typer.Option(
    "--l3-size", help="GiB of a store tier below host, replayed in accounting mode (the "
    "tier `verify --workload l3-*` runs in real bytes): every cached prefix written through; "
    "a deeper prefix than device + host hold is read back before admission, a device hit.")]
L3BackendOpt = Annotated[BackendKind | None, typer.Option(
    "--l3-backend", help="Store backend whose object layout and default bandwidth/latency "
    "the store tier uses (default mooncake); needs --l3-size.")]
LossyOpt = Annotated[LossyCheckpoints | None, typer.Option(
    "--lossy-checkpoints", help="Lossy what-if, never the default, not bit-exact: replays "
    "with full-precision checkpoints and with cached checkpoints stored int8 or fp8 (e4m3), "
    "one float32 scale per row, the cache holding as many more as the smaller slots allow; "
    "`verify --lossy-checkpoints` measures the logit error.")]
MAX_L3_GIB = float(1 << 20)  # 1 PiB


@dataclass(frozen=True, slots=True)
class SimInputs:
    """The workload and simulation options of `simulate`, `figures` and `report`."""

    trace: TraceOpt = None
    workload: WorkloadOpt = None
    num_requests: NumOpt = None
    seed: SeedOpt = 0
    rate: RateOpt = None
    time_scale: ScaleOpt = 1.0
    chunked_prefill_size: ChunkOpt = SIM_DEFAULTS.chunked_prefill_tokens
    mamba_track_interval: TrackOpt = SIM_DEFAULTS.mamba_track_interval_tokens
    step_overhead_ms: OverheadOpt = None
    prefill_ms_per_token: PrefillCostOpt = None
    decode_ms_per_token: DecodeCostOpt = None
    state_admission: AdmissionOpt = SIM_DEFAULTS.state_admission
    state_eviction: EvictionOpt = SIM_DEFAULTS.state_eviction
    time_gpu: TimeGpuOpt = None
    flops_efficiency: FlopsEffOpt = EFF_DEFAULTS.flops
    hbm_efficiency: HbmEffOpt = EFF_DEFAULTS.hbm
    roofline_overhead_ms: RooflineOverheadOpt = EFF_DEFAULTS.overhead_ms
    hicache_write_policy: WritePolicyOpt = None
    host_state_backup: StateBackupOpt = None
    l3_size: L3SizeOpt = None
    l3_backend: L3BackendOpt = None

    def check(self) -> None:
        """Every value in range before any work starts: each option's row of the one table
        (`cli.bounds`), then what depends on the others."""
        if self.trace is not None:
            check_regular(f"--trace {self.trace}", self.trace)  # a FIFO would block forever
        for field in fields(self):
            check_option("--" + field.name.replace("_", "-"), getattr(self, field.name))
        if self.num_requests is not None and self.trace is None:
            check_int("--num-requests", self.num_requests, low=1, high=MAX_GENERATED_REQUESTS)
        if self.l3_size is not None:
            check_number("--l3-size", self.l3_size, low=0, high=MAX_L3_GIB, low_open=True)
        elif self.l3_backend is not None:
            raise ValueError(f"--l3-backend {self.l3_backend.value}: has no effect without "
                             "--l3-size")

    @property
    def asked(self) -> bool:
        return self.trace is not None or self.workload is not None

    def config(self, plan: SglangPlan) -> SimConfig:
        """The replay's settings; a write policy without a host tier is an input error."""
        policy = self.hicache_write_policy
        if policy is not None and not plan.layout.deployment.enable_hierarchical_cache:
            raise ValueError(f"--hicache-write-policy {policy.value}: has no effect without "
                             "--enable-hierarchical-cache")
        backup = self.host_state_backup
        if backup is not None and not plan.layout.deployment.enable_hierarchical_cache:
            raise ValueError(f"--host-state-backup {backup.value}: has no effect without "
                             "--enable-hierarchical-cache")
        linear = (self.step_overhead_ms, self.prefill_ms_per_token, self.decode_ms_per_token)
        cost = None
        if any(v is not None for v in linear):
            overhead, prefill, decode = (COST_DEFAULTS.overhead_ms if self.step_overhead_ms is None
                                         else self.step_overhead_ms,
                                         COST_DEFAULTS.prefill_ms_per_token
                                         if self.prefill_ms_per_token is None
                                         else self.prefill_ms_per_token,
                                         COST_DEFAULTS.decode_ms_per_token
                                         if self.decode_ms_per_token is None
                                         else self.decode_ms_per_token)
            cost = StepCost(overhead_ms=overhead, prefill_ms_per_token=prefill,
                            decode_ms_per_token=decode)
        return SimConfig(
            chunked_prefill_tokens=self.chunked_prefill_size,
            mamba_track_interval_tokens=self.mamba_track_interval,
            step_cost=cost, time_gpu=self.time_gpu, state_admission=self.state_admission,
            state_eviction=self.state_eviction,
            efficiency=Efficiency(flops=self.flops_efficiency, hbm=self.hbm_efficiency,
                                  overhead_ms=self.roofline_overhead_ms),
            hicache_write_policy=policy or SIM_DEFAULTS.hicache_write_policy,
            host_state_backup=backup or SIM_DEFAULTS.host_state_backup,
            l3=None if self.l3_size is None else L3Config(
                capacity_bytes=int(self.l3_size * 2**30),
                backend=self.l3_backend or BackendKind.MOONCAKE),
        )


