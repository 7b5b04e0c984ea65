"""The fleet options of `simulate`: replicas, the router, the arrival-rate scale, and the
prefill/decode split with its link."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import typer

from kvledger.cli.bounds import check_option
from kvledger.core.limits import check_count
from kvledger.sim.fleet.links import LinkKind
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

PrefillOpt = Annotated[int | None, typer.Option(
    "--prefill-replicas", help="Prefill/decode disaggregation: P prefill servers (their own "
    "plan, --disaggregation-mode prefill) behind --router; with --decode-replicas. Compared "
    "with P + D aggregated replicas on the same GPUs.")]
DecodeOpt = Annotated[int | None, typer.Option(
    "--decode-replicas", help="D decode servers (--disaggregation-mode decode's plan), "
    "least-load; with --prefill-replicas.")]
LinkOpt = Annotated[LinkKind | None, typer.Option(
    "--link", help="What a request's KV and state cross from prefill to decode: nvlink, "
    "ib-400 (default), ib-200, roce-400, roce-200, roce-100.")]
SharedStoreOpt = Annotated[bool, typer.Option(
    "--l3-shared", help="With --replicas and --l3-size: one store tier of that size shared by "
    "every replica (Mooncake Store's global cache), and the fleet's reuse without a store "
    "tier and with R private tiers of the same total beside it.")]


@dataclass(frozen=True, slots=True)
class FleetInputs:
    replicas: ReplicasOpt = None
    router: RouterOpt = RouterKind.ROUND_ROBIN
    rate_scale: RateScaleOpt = None
    prefill_replicas: PrefillOpt = None
    decode_replicas: DecodeOpt = None
    link: LinkOpt = None
    l3_shared: SharedStoreOpt = False

    @property
    def disaggregated(self) -> bool:
        return self.prefill_replicas is not None or self.decode_replicas is not None

    def check(self) -> None:
        if self.disaggregated:
            if self.prefill_replicas is None or self.decode_replicas is None:
                raise ValueError("--prefill-replicas/--decode-replicas: give both")
            if self.replicas is not None:
                raise ValueError("--replicas: aggregated replicas; with --prefill-replicas/"
                                 "--decode-replicas the aggregated fleet compared is P + D")
            for flag, n in (("--prefill-replicas", self.prefill_replicas),
                            ("--decode-replicas", self.decode_replicas)):
                check_count(flag, n, high=MAX_REPLICAS)
            check_option("--rate-scale", self.rate_scale)
            return
        if self.link is not None:
            raise ValueError("--link: needs --prefill-replicas and --decode-replicas")
        if self.l3_shared and self.replicas is None:
            raise ValueError("--l3-shared: a store tier shared by replicas; needs --replicas R")
        if self.replicas is None:
            if self.rate_scale is not None or self.router is not RouterKind.ROUND_ROBIN:
                raise ValueError("--router/--rate-scale: need --replicas R")
            return
        check_count("--replicas", self.replicas, high=MAX_REPLICAS)  # tighter than its row
        check_option("--rate-scale", self.rate_scale)
