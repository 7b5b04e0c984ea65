"""The fleet options of `simulate`: replicas, the router, and the arrival-rate scale."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import typer

from kvledger.cli.bounds import check_option
from kvledger.core.limits import check_count
from kvledger.sim.fleet.routers import RouterKind
from kvledger.sim.fleet.run import MAX_REPLICAS

ReplicasOpt = Annotated[int | None, typer.Option(
    "--replicas", help=f"Replicas of the deployment behind one router (1..{MAX_REPLICAS}); "
    "each is one rank's cache and time model.")]
RouterOpt = Annotated[RouterKind, typer.Option(
    "--router", help="With --replicas: round-robin, least-load, prefix-aware (SGLang "
    "router's cache-aware), kv-aware (Dynamo's KV router), precise-prefix (llm-d's precise "
    "prefix-cache scorer), state-aware (kvledger's: only prefixes with a state).")]
RateScaleOpt = Annotated[float | None, typer.Option(
    "--rate-scale", help="Replay arrivals F times faster (2 = twice the request rate); "
    "with --replicas.")]


@dataclass(frozen=True, slots=True)
class FleetInputs:
    replicas: ReplicasOpt = None
    router: RouterOpt = RouterKind.ROUND_ROBIN
    rate_scale: RateScaleOpt = None

    def check(self) -> None:
        if self.replicas is None:
            if self.rate_scale is not None or self.router is not RouterKind.ROUND_ROBIN:
                raise ValueError("--router/--rate-scale: need --replicas R")
            return
        check_count("--replicas", self.replicas, high=MAX_REPLICAS)  # tighter than its row
        check_option("--rate-scale", self.rate_scale)
