"""Simulation settings: per-step token budgets, the step-time model, checkpoint cadence.

The clock is discrete-event: one engine step (a forward pass) costs what
`kvledger.sim.timing` says: by default a roofline over the model's layers on the timing GPU
(`time_gpu`, else the plan's `--gpu`, else an H200), or with `step_cost` set the linear
model of hand-set constants. Time sets the pace (queueing, TTFT) and, through the order of
arrivals and finishes, which prefixes are still cached when they come back.

Scheduling mirrors SGLang's defaults where it matters to memory: first come, first served
with head-of-line blocking; chunked prefill of at most `chunked_prefill_tokens` per step, a
chunk cut to whole pages; one chunked request at a time; decode of every running request each
step alongside the prefill (like `--enable-mixed-chunk`).

>>> c = SimConfig(step_cost=StepCost())
>>> c.step_cost.step_ms(StepWork(prefill_spans=((0, 8192),), decode_contexts=(100,) * 64))
179.68
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kvledger.cache.policies import StateAdmission, StateEviction
from kvledger.host.policy import BackupPolicy
from kvledger.host.state_backup import HostStateBackup
from kvledger.sim.l3 import L3Config
from kvledger.sim.timing import Efficiency, StepCost, StepWork

__all__ = ["DEFAULT_TIME_GPU", "SimConfig", "StepCost", "StepWork"]
DEFAULT_TIME_GPU = "H200"


@dataclass(frozen=True, slots=True, kw_only=True)
class SimConfig:
    chunked_prefill_tokens: int = 8192  # SGLang --chunked-prefill-size
    # SGLang --mamba-track-interval: during decode a state checkpoint is taken every this many
    # tokens (server_args.py, default 256); it must be a multiple of the page.
    mamba_track_interval_tokens: int = 256
    mamba_chunk_tokens: int = 64  # linear-attention chunk; checkpoint grid = lcm(chunk, page)
    integrity_every_steps: int = 0  # 0: check only at the end
    # SGLang --hicache-write-policy (default write_through); used only when the plan enables
    # the host tier (--enable-hierarchical-cache)
    hicache_write_policy: BackupPolicy = BackupPolicy.WRITE_THROUGH
    # which states get host room with their KV (`kvledger.host.state_backup`); `all` is
    # SGLang's behaviour, anything else kvledger's design
    host_state_backup: HostStateBackup = HostStateBackup.ALL
    # state policies (`kvledger.cache.policies`); the defaults are the engine's behaviour
    state_admission: StateAdmission = StateAdmission.ENGINE
    state_eviction: StateEviction = StateEviction.LRU
    step_cost: StepCost | None = None  # None: the roofline (`kvledger.sim.timing.Roofline`)
    efficiency: Efficiency = field(default_factory=Efficiency)  # the roofline's fractions
    time_gpu: str | None = None  # the roofline's GPU; None: the plan's, else DEFAULT_TIME_GPU
    l3: L3Config | None = None  # the store tier below host (--l3-size), if any

    def validate(self, page_tokens: int) -> None:
        if self.chunked_prefill_tokens < page_tokens:
            raise ValueError(f"--chunked-prefill-size {self.chunked_prefill_tokens}: must hold "
                             f"at least one {page_tokens}-token page")
        if self.mamba_track_interval_tokens < 1 or self.mamba_track_interval_tokens % page_tokens:
            raise ValueError(f"--mamba-track-interval {self.mamba_track_interval_tokens}: must "
                             f"be a positive multiple of the page ({page_tokens} tokens)")
        if self.step_cost is not None:
            self.step_cost.validate()
        self.efficiency.validate()
