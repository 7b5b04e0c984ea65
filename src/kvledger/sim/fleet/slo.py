"""One fleet candidate of an SLO search, its replay, and whether it meets the SLO.

A candidate is a layout (GPU, tensor parallelism, host tier on or off) times a replica count
times a router. Its verdict comes from its own fleet replay (`run.simulate_fleet`, the replay
`simulate --replicas R --router P` runs), never from an estimate:

    meets  = every request finishes, the run is not saturated (`capacity.overload_verdict`),
             fleet TTFT p95 ≤ the TTFT target and, when one is given, TPOT p95 ≤ its target

A saturated run fails whatever its latency says: its figures grow with the trace's length.
A run that fails says every reason it fails, each with its numbers.

>>> slo = Slo(ttft_p95_ms=500.0)
>>> Outcome(requests=4, finished=4, ttft_p95_ms=812.25, tpot_p95_ms=2.0, saturated=False,
...         queue_grows=False, busy_replicas=0.5, token_hit_rate=0.0,
...         usable_hit_rate=0.0).failures(slo, replicas=1)
('TTFT p95 812.2 ms > 500 ms',)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kvledger.sglang.plan import SglangPlan
from kvledger.sim.config import SimConfig
from kvledger.sim.fleet.routers import RouterKind
from kvledger.sim.fleet.run import simulate_fleet
from kvledger.sim.fleet.summary import summarize
from kvledger.sim.workload import Workload


@dataclass(frozen=True, slots=True, kw_only=True)
class Slo:
    ttft_p95_ms: float
    tpot_p95_ms: float | None = None

    def describe(self) -> str:
        tpot = "" if self.tpot_p95_ms is None else f", TPOT p95 ≤ {self.tpot_p95_ms:g} ms"
        return f"TTFT p95 ≤ {self.ttft_p95_ms:g} ms{tpot}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Layout:
    """One replica's deployment: `tp` GPUs of one kind, with or without SGLang's host tier."""

    gpu: str  # catalogue name
    tp: int
    host_tier: bool

    def describe(self) -> str:
        return f"{self.gpu} tp {self.tp}" + (" + host tier" if self.host_tier else "")


@dataclass(frozen=True, slots=True, kw_only=True)
class Candidate:
    layout: Layout
    replicas: int  # all of them: with prefill_replicas, P prefill + (replicas − P) decode
    router: RouterKind  # one replica: round-robin (no choice to make); PD: the prefill fleet's
    prefill_replicas: int | None = None  # None: aggregated replicas (`slo_pd`)

    @property
    def gpus(self) -> int:
        return self.layout.tp * self.replicas

    @property
    def decode_replicas(self) -> int | None:
        return None if self.prefill_replicas is None else self.replicas - self.prefill_replicas

    def describe(self) -> str:
        if self.prefill_replicas is not None:
            return (f"{self.prefill_replicas} prefill + {self.decode_replicas} decode × "
                    f"{self.layout.describe()}, {self.router.value}")
        return f"{self.replicas} × {self.layout.describe()}, {self.router.value}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """What a candidate's own fleet replay measured (no wall time: results are the serial
    run's whichever runner replayed them)."""

    requests: int
    finished: int
    ttft_p95_ms: float | None  # None: nothing finished
    tpot_p95_ms: float | None
    saturated: bool
    queue_grows: bool
    busy_replicas: float  # inf: every request arrives at once
    token_hit_rate: float
    usable_hit_rate: float

    def failures(self, slo: Slo, *, replicas: int) -> tuple[str, ...]:
        """Every reason this run misses `slo`; () when it meets it."""
        why = []
        if self.finished < self.requests:
            why.append(f"{self.requests - self.finished:,} of {self.requests:,} requests "
                       "never finish")
        if self.saturated:
            load = ("the queue grows" if self.queue_grows or not math.isfinite(
                self.busy_replicas) or self.busy_replicas <= replicas
                else f"the offered load keeps {self.busy_replicas:.2f} replicas busy")
            why.append(f"saturated: {load} ({replicas} replica{'s' * (replicas > 1)})")
        if self.ttft_p95_ms is not None and self.ttft_p95_ms > slo.ttft_p95_ms:
            why.append(f"TTFT p95 {self.ttft_p95_ms:,.1f} ms > {slo.ttft_p95_ms:g} ms")
        if (slo.tpot_p95_ms is not None and self.tpot_p95_ms is not None
                and self.tpot_p95_ms > slo.tpot_p95_ms):
            why.append(f"TPOT p95 {self.tpot_p95_ms:,.2f} ms > {slo.tpot_p95_ms:g} ms")
        return tuple(why)


def evaluate(plan: SglangPlan, workload: Workload, config: SimConfig, replicas: int,
             router: RouterKind, tick=None) -> Outcome:
    """Replay `workload` on `replicas` copies of `plan` behind `router` (a runner task:
    module level and pure, `kvledger.core.runner`)."""
    progress = [tick] if tick is not None else []
    fleet = simulate_fleet(plan, workload, config, replicas=replicas, router=router,
                           progress=progress)
    s = summarize(fleet, chunk_tokens=config.chunked_prefill_tokens)
    lat = s.latency
    return Outcome(requests=s.requests, finished=s.finished,
                   ttft_p95_ms=None if lat is None else lat.ttft_ms.p95,
                   tpot_p95_ms=None if lat is None else lat.tpot_ms.p95,
                   saturated=s.overload.saturated, queue_grows=s.overload.queue_grows,
                   busy_replicas=s.overload.busy_replicas, token_hit_rate=s.token_hit_rate,
                   usable_hit_rate=s.usable_hit_rate)
