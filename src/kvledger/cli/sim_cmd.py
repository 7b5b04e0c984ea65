"""`kvledger simulate`: replay a trace or a generated workload on a deployment's plan."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kvledger.cli.app import command, console, emit_json, err_console, user_errors
from kvledger.cli.groups import option_group
from kvledger.cli.options import JsonOpt, PlanInputs, plan_from
from kvledger.host.policy import BackupPolicy
from kvledger.limits import (
    MAX_COUNT,
    MAX_GENERATED_REQUESTS,
    MAX_RATE_PER_S,
    MAX_SEED,
    MAX_STEP_MS,
    MAX_TIME_SCALE,
    check_int,
    check_number,
)
from kvledger.sim.config import SimConfig, StepCost
from kvledger.sim.l3 import L3Config
from kvledger.store.backend import BackendKind

SIM_DEFAULTS, COST_DEFAULTS = SimConfig(), StepCost()  # flag defaults are the dataclasses' own

if TYPE_CHECKING:
    from kvledger.plan import Plan
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
OverheadOpt = Annotated[float, typer.Option(
    "--step-overhead-ms", help="Step-time model: fixed cost of one forward pass (ms).")]
PrefillCostOpt = Annotated[float, typer.Option(
    "--prefill-ms-per-token", help="Step-time model: cost per prefill token (ms).")]
DecodeCostOpt = Annotated[float, typer.Option(
    "--decode-ms-per-token", help="Step-time model: cost per decoded token (ms).")]
WritePolicyOpt = Annotated[BackupPolicy | None, typer.Option(
    "--hicache-write-policy", help="Host tier write policy (SGLang's flag; default "
    f"{SIM_DEFAULTS.hicache_write_policy.value}); needs --enable-hierarchical-cache.")]
L3SizeOpt = Annotated[float | None, typer.Option(
    "--l3-size", help="GiB of a store tier below host, replayed in accounting mode: every "
    "cached prefix written through, restored past the device/host hit.")]
L3BackendOpt = Annotated[BackendKind | None, typer.Option(
    "--l3-backend", help="Store backend whose object layout and default bandwidth/latency "
    "the store tier uses (default mooncake); needs --l3-size.")]
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
    step_overhead_ms: OverheadOpt = COST_DEFAULTS.overhead_ms
    prefill_ms_per_token: PrefillCostOpt = COST_DEFAULTS.prefill_ms_per_token
    decode_ms_per_token: DecodeCostOpt = COST_DEFAULTS.decode_ms_per_token
    hicache_write_policy: WritePolicyOpt = None
    l3_size: L3SizeOpt = None
    l3_backend: L3BackendOpt = None

    def check(self) -> None:
        """Every value in range before any work starts (the CLI boundary; kvledger.limits)."""
        if self.num_requests is not None:
            high = MAX_COUNT if self.trace is not None else MAX_GENERATED_REQUESTS
            check_int("--num-requests", self.num_requests, low=1, high=high)
        check_int("--seed", self.seed, low=0, high=MAX_SEED)
        if self.rate is not None:
            check_number("--rate", self.rate, low=0, high=MAX_RATE_PER_S, low_open=True)
        check_number("--time-scale", self.time_scale, low=0, high=MAX_TIME_SCALE, low_open=True)
        check_int("--chunked-prefill-size", self.chunked_prefill_size, low=1, high=MAX_COUNT)
        check_int("--mamba-track-interval", self.mamba_track_interval, low=1, high=MAX_COUNT)
        check_number("--step-overhead-ms", self.step_overhead_ms, low=0, high=MAX_STEP_MS,
                     low_open=True)
        for flag, value in (("--prefill-ms-per-token", self.prefill_ms_per_token),
                            ("--decode-ms-per-token", self.decode_ms_per_token)):
            check_number(flag, value, low=0, high=MAX_STEP_MS)
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
        return SimConfig(
            chunked_prefill_tokens=self.chunked_prefill_size,
            mamba_track_interval_tokens=self.mamba_track_interval,
            step_cost=StepCost(overhead_ms=self.step_overhead_ms,
                               prefill_ms_per_token=self.prefill_ms_per_token,
                               decode_ms_per_token=self.decode_ms_per_token),
            hicache_write_policy=policy or SIM_DEFAULTS.hicache_write_policy,
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
        from kvledger.extras import MEMORY

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
             json: JsonOpt = False) -> None:
    from kvledger.report.sim_json import sim_json
    from kvledger.report.sim_view import render_sim

    with user_errors():
        plan, ignored = plan_from(inputs, ctx.args)
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
