"""The options of `recommend --trace`: the workload, the SLO, what is searched and the price.

The workload options are `simulate`'s own (`cli.options.sim`), so the `simulate` command a
recommendation prints replays the same requests; the simulation knobs stay at their
defaults, which that command uses too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import typer

from kvledger.cli.options.sim import NumOpt, RateOpt, ScaleOpt, SeedOpt, SimInputs, TraceOpt
from kvledger.sim.fleet.links import DEFAULT_LINK, LINKS, Link, LinkKind
from kvledger.sim.fleet.routers import RouterKind
from kvledger.sim.fleet.slo import Slo
from kvledger.sim.fleet.slo_search import HOST_TIERS, MAX_SEARCH_REPLICAS, Objective

TtftOpt = Annotated[float | None, typer.Option(
    "--ttft-p95-ms", help="With --trace/--workload: the fleet's TTFT p95 target (ms); the "
    "smallest fleet whose own replay meets it (and is not saturated) is recommended.")]
TpotOpt = Annotated[float | None, typer.Option(
    "--tpot-p95-ms", help="With --ttft-p95-ms: a TPOT p95 target too (ms per output token).")]
SloWorkloadOpt = Annotated[str | None, typer.Option(
    "--workload", help="A generated workload instead of --trace (as `simulate --workload`).")]
PriceOpt = Annotated[list[str] | None, typer.Option(
    "--gpu-price", metavar="NAME=USD", help="NAME=USD per GPU-hour, repeatable: replaces or adds one GPU's price "
    "and ranks fleets by cost (defaults: H200 4.54, B200 6.03, Spheron on-demand, March "
    "2026).")]
ObjectiveOpt = Annotated[Objective | None, typer.Option(
    "--objective", help="Smallest by gpus (default) or by cost (USD per hour, the price "
    "table); --gpu-price implies cost.")]
RoutersOpt = Annotated[str | None, typer.Option(
    "--routers", help="Routers to search, comma-separated (default: every --router of "
    "`simulate`).")]
MaxReplicasOpt = Annotated[int, typer.Option(
    "--max-replicas", help="Most replicas of one layout searched.")]
PdOpt = Annotated[bool, typer.Option(
    "--pd", help="Search prefill/decode splits. With --trace/--workload: P prefill + D decode "
    "servers of each layout without the host tier, as `simulate --prefill-replicas P "
    "--decode-replicas D`. With --requests/--context, --nodes N and one --gpu: every split of "
    "the N nodes (decode servers hold the workload, prefill servers one request of C tokens), "
    "each side's best layout, and the split with the fewest decode nodes that holds it.")]
SloLinkOpt = Annotated[LinkKind | None, typer.Option(
    "--link", help="With --pd: the prefill→decode link (default ib-400).")]
HostTierOpt = Annotated[str, typer.Option(
    "--host-tier", help="SGLang's host tier in the searched layouts: off, on, or off,on.")]


@dataclass(frozen=True, slots=True)
class SloInputs:
    trace: TraceOpt = None
    workload: SloWorkloadOpt = None
    num_requests: NumOpt = None
    seed: SeedOpt = 0
    rate: RateOpt = None
    time_scale: ScaleOpt = 1.0
    ttft_p95_ms: TtftOpt = None
    tpot_p95_ms: TpotOpt = None
    gpu_price: PriceOpt = None
    objective: ObjectiveOpt = None
    routers: RoutersOpt = None
    max_replicas: MaxReplicasOpt = MAX_SEARCH_REPLICAS
    host_tier: HostTierOpt = "off,on"
    pd: PdOpt = False
    link: SloLinkOpt = None

    @property
    def asked(self) -> bool:
        return self.trace is not None or self.workload is not None

    def sim(self) -> SimInputs:
        return SimInputs(trace=self.trace, workload=self.workload, num_requests=self.num_requests,
                         seed=self.seed, rate=self.rate, time_scale=self.time_scale)

    def slo(self) -> Slo:
        if self.ttft_p95_ms is None:
            raise ValueError("--trace/--workload: give the SLO to size for, --ttft-p95-ms X")
        return Slo(ttft_p95_ms=self.ttft_p95_ms, tpot_p95_ms=self.tpot_p95_ms)

    def chosen_objective(self) -> Objective:
        if self.objective is not None:
            return self.objective
        return Objective.COST if self.gpu_price else Objective.GPUS

    def router_kinds(self) -> tuple[RouterKind, ...]:
        if self.routers is None:
            return tuple(RouterKind)
        kinds = []
        for word in self.routers.split(","):
            try:
                kinds.append(RouterKind(word.strip()))
            except ValueError:
                raise ValueError(f"--routers {self.routers}: {word.strip()!r} is not a router; "
                                 f"expected {', '.join(k.value for k in RouterKind)}") from None
        return tuple(dict.fromkeys(kinds))

    def pd_link(self) -> Link | None:
        """The link PD splits cross; None: no splits searched."""
        if not self.pd:
            if self.link is not None:
                raise ValueError("--link: the prefill→decode link; needs --pd")
            return None
        return LINKS[self.link or DEFAULT_LINK]

    def host_tiers(self) -> tuple[bool, ...]:
        words = [w.strip() for w in self.host_tier.split(",")]
        if not words or any(w not in ("off", "on") for w in words):
            raise ValueError(f"--host-tier {self.host_tier}: expected off, on or off,on")
        return tuple(t for t in HOST_TIERS if ("on" if t else "off") in words)

    def check_unused(self) -> None:
        """Without a workload the SLO options mean nothing: refuse them by name.

        `--pd` is the one exception: without a workload it asks for the node splits of
        `--nodes` (`kvledger.sizing.pd_split`), which the concurrency mode answers.
        """
        given = {"--ttft-p95-ms": self.ttft_p95_ms, "--tpot-p95-ms": self.tpot_p95_ms,
                 "--gpu-price": self.gpu_price or None, "--objective": self.objective,
                 "--routers": self.routers, "--num-requests": self.num_requests,
                 "--link": self.link,
                 "--rate": self.rate}
        for flag, value in given.items():
            if value is not None:
                raise ValueError(f"{flag}: sizes a fleet for a workload; needs --trace or "
                                 "--workload")
