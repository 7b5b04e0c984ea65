"""Simulation settings: per-step token budgets, the step-time model, checkpoint cadence.

The clock is discrete-event: one engine step (a forward pass) costs

    step_ms = overhead_ms + prefill_tokens · prefill_ms_per_token + decode_tokens · decode_ms_per_token

Defaults are assumptions for one H200-class rank, not measurements; pass your own to match a
real server. They only set the pace (queueing, waiting time); which tokens hit, which pages
are evicted and which ledger runs out depend on the order of events, not on the constants.

Scheduling mirrors SGLang's defaults where it matters to memory: first come, first served
with head-of-line blocking; chunked prefill of at most `chunked_prefill_tokens` per step, a
chunk cut to whole pages; one chunked request at a time; decode of every running request each
step alongside the prefill (like `--enable-mixed-chunk`).

>>> c = SimConfig()
>>> c.step_cost.step_ms(prefill_tokens=8192, decode_tokens=64)
179.68
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kvledger.host.policy import BackupPolicy
from kvledger.sim.l3 import L3Config


@dataclass(frozen=True, slots=True, kw_only=True)
class StepCost:
    overhead_ms: float = 12.0  # launch + sampling + scheduling per forward pass
    prefill_ms_per_token: float = 0.02  # 50k prefill tokens/s
    decode_ms_per_token: float = 0.06  # grows with batch: attention reads and MoE routing

    def step_ms(self, *, prefill_tokens: int, decode_tokens: int) -> float:
        return round(
            self.overhead_ms
            + prefill_tokens * self.prefill_ms_per_token
            + decode_tokens * self.decode_ms_per_token,
            6,
        )

    def validate(self) -> None:
        if self.overhead_ms <= 0 or self.prefill_ms_per_token < 0 or self.decode_ms_per_token < 0:
            raise ValueError("step cost: overhead must be positive and per-token costs ≥ 0")


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
    step_cost: StepCost = field(default_factory=StepCost)
    l3: L3Config | None = None  # the store tier below host (--l3-size), if any

    def validate(self, page_tokens: int) -> None:
        if self.chunked_prefill_tokens < page_tokens:
            raise ValueError(f"--chunked-prefill-size {self.chunked_prefill_tokens}: must hold "
                             f"at least one {page_tokens}-token page")
        if self.mamba_track_interval_tokens < 1 or self.mamba_track_interval_tokens % page_tokens:
            raise ValueError(f"--mamba-track-interval {self.mamba_track_interval_tokens}: must "
                             f"be a positive multiple of the page ({page_tokens} tokens)")
        self.step_cost.validate()
