"""`kvledger simulate`: replay a trace or a generated workload on a deployment's plan."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kvledger.cache.policies.choice import StateAdmission, StateEviction
from kvledger.cache.policies.lossy_states import LossyCheckpoints
from kvledger.cli.app import command, console, emit_json, err_console, user_errors
from kvledger.cli.options.groups import option_group
from kvledger.cli.options.plan import JsonOpt, PlanInputs, plan_from
from kvledger.host.policy import BackupPolicy
from kvledger.host.state_backup import HostStateBackup
from kvledger.core.limits import (
    MAX_COUNT,
    MAX_GENERATED_REQUESTS,
    MAX_RATE_PER_S,
    MAX_SEED,
    MAX_STEP_MS,
    MAX_TIME_SCALE,
    check_int,
    check_number,
)
from kvledger.sim.config import DEFAULT_TIME_GPU, SimConfig, StepCost
from kvledger.sim.l3 import L3Config
from kvledger.sim.timing import Efficiency
from kvledger.store.backend import BackendKind

SIM_DEFAULTS, COST_DEFAULTS = SimConfig(), StepCost()  # flag defaults are the dataclasses' own
EFF_DEFAULTS = Efficiency()

if TYPE_CHECKING:
    from kvledger.sglang.plan import Plan
    from kvledger.sim.replay import SimResult

TraceOpt = Annotated[Path | None, typer.Option(
    "--trace", help="Mooncake FAST'25 JSONL trace (timestamp, input_length, output_length, "
    "hash_ids).", exists=True, dir_okay=False)]
WorkloadOpt = Annotated[str | None, typer.Option(
    "--workload", help="Generated workload: chat, agent, shared-prompt or zipf.")]
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
    "ghost table; finish states while they are reused). All lossless.")]
EvictionOpt = Annotated[StateEviction, typer.Option(
    "--state-eviction", help="Which cached state leaves first: lru (SGLang's), flop-aware "
    "(FLOPs saved per byte blended with recency, the blend tuned online), keep-junctions.")]
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
        """Every value in range before any work starts (the CLI boundary; kvledger.core.limits)."""
        if self.num_requests is not None:
            high = MAX_COUNT if self.trace is not None else MAX_GENERATED_REQUESTS
            check_int("--num-requests", self.num_requests, low=1, high=high)
        check_int("--seed", self.seed, low=0, high=MAX_SEED)
        if self.rate is not None:
            check_number("--rate", self.rate, low=0, high=MAX_RATE_PER_S, low_open=True)
        check_number("--time-scale", self.time_scale, low=0, high=MAX_TIME_SCALE, low_open=True)
        check_int("--chunked-prefill-size", self.chunked_prefill_size, low=1, high=MAX_COUNT)
        check_int("--mamba-track-interval", self.mamba_track_interval, low=1, high=MAX_COUNT)
        if self.step_overhead_ms is not None:
            check_number("--step-overhead-ms", self.step_overhead_ms, low=0, high=MAX_STEP_MS,
                         low_open=True)
        for flag, value in (("--prefill-ms-per-token", self.prefill_ms_per_token),
                            ("--decode-ms-per-token", self.decode_ms_per_token)):
            if value is not None:
                check_number(flag, value, low=0, high=MAX_STEP_MS)
        for flag, value in (("--flops-efficiency", self.flops_efficiency),
                            ("--hbm-efficiency", self.hbm_efficiency)):
            check_number(flag, value, low=0, high=1, low_open=True)
        check_number("--roofline-overhead-ms", self.roofline_overhead_ms, low=0,
                     high=MAX_STEP_MS)
        if self.l3_size is not None:
            check_number("--l3-size", self.l3_size, low=0, high=MAX_L3_GIB, low_open=True)
        elif self.l3_backend is not None:
            raise ValueError(f"--l3-backend {self.l3_backend.value}: has no effect without "
                             "--l3-size")

    @property
    def asked(self) -> bool:
        return self.trace is not None or self.workload is not None

    def config(self, plan: Plan) -> SimConfig:
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


def run_simulation(plan: Plan, work: SimInputs, *, progress: bool) -> SimResult:
    """Load the workload and replay it, with a progress bar on stderr when asked."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from kvledger.sim.replay import simulate
    from kvledger.sim.sources import load_workload

    work.check()
    config = work.config(plan)
    if plan.layout.deployment.enable_hierarchical_cache:
        from kvledger.core.extras import MEMORY

        MEMORY.require("simulating the host tier (--enable-hierarchical-cache)")
    workload = load_workload(trace=work.trace, generator=work.workload,
                             num_requests=work.num_requests, seed=work.seed,
                             rate_per_s=work.rate, time_scale=work.time_scale)
    if not progress:
        return simulate(plan, workload, config)
    bar = Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), console=err_console, transient=True)
    with bar:
        task = bar.add_task(f"replaying {workload.name}", total=len(workload.requests))
        return simulate(plan, workload, config,
                        progress=[lambda done, total: bar.update(task, completed=done)])


@command(help="Replay a workload (a Mooncake trace or a generator) against the prefix tree "
         "under a deployment's capacity plan: hit rates, evictions, which ledger blocks; with "
         "--enable-hierarchical-cache (--hicache-ratio / --hicache-size) also the host tier's "
         "backups, loadbacks and evictions. SGLang deployment flags may follow, as for "
         "`kvledger plan`.")
@option_group(PlanInputs, "inputs")
@option_group(SimInputs, "sim")
def simulate(ctx: typer.Context, inputs: PlanInputs, sim: SimInputs,
             csv: Annotated[Path | None, typer.Option(
                 "--csv", help="Write the per-step time series here.", dir_okay=False)] = None,
             no_progress: Annotated[bool, typer.Option(
                 "--no-progress", help="No progress bar on stderr.")] = False,
             compare: Annotated[bool, typer.Option(
                 "--compare", help="Replay the state policies side by side (engine, "
                 "FLOP-aware, Marconi, reuse-filtered, ghost-branch) on this trace and memory, "
                 "plus the FULL-only ceiling; --state-admission/--state-eviction are ignored."
             )] = False,
             figure_dir: Annotated[Path | None, typer.Option(
                 "--figure-dir", help="With --compare: write policies.svg and .png here.",
                 file_okay=False)] = None,
             slot_economy: Annotated[str | None, typer.Option(
                 "--slot-economy", help="What-if, never the default: shared-track[=POOL_SLOTS] "
                 "replays the engine's slot economy and one where ping-pong track slots come "
                 "from a shared pool (default 8) only in steps that save a checkpoint; reports "
                 "the slots freed and the hit they buy.")] = None,
             lossy_checkpoints: LossyOpt = None,
             json: JsonOpt = False) -> None:
    from kvledger.report.sim_json import sim_json
    from kvledger.report.sim_view import render_sim

    with user_errors():
        plan, ignored = plan_from(inputs, ctx.args)
        if figure_dir is not None and not compare:
            raise ValueError("--figure-dir: needs --compare")
        if lossy_checkpoints is not None:
            if compare or csv is not None or slot_economy is not None:
                raise ValueError("--lossy-checkpoints: runs on its own (not with --compare, "
                                 "--csv or --slot-economy)")
            from kvledger.cli.runners.sim_lossy import run_lossy

            run_lossy(plan, sim, kind=lossy_checkpoints, json=json, progress=not no_progress,
                      ignored=list(ignored))
            return
        if slot_economy is not None:
            if compare or csv is not None:
                raise ValueError("--slot-economy: runs on its own (not with --compare or --csv)")
            from kvledger.cli.runners.sim_slot_economy import run_slot_economy

            run_slot_economy(plan, sim, spec=slot_economy, json=json,
                             progress=not no_progress, ignored=list(ignored))
            return
        if compare:
            from kvledger.cli.runners.sim_compare import run_compare

            run_compare(plan, sim, figure_dir=figure_dir, json=json,
                        progress=not no_progress, ignored=list(ignored))
            return
        result = run_simulation(plan, sim, progress=not no_progress)
        if csv is not None:
            result.series.write_csv(csv)
    if json:
        emit_json(sim_json(result.summary, ignored_flags=ignored, notes=plan.notes,
                           csv=str(csv) if csv else None))
        return
    render_sim(result.summary, console)
    if csv is not None:
        console.print(f"time series: {len(result.series):,} rows → {csv}")
    for flag in ignored:
        console.print(f"[yellow]ignored flag: {flag}[/]")
