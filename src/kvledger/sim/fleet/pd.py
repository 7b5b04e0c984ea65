"""Prefill/decode disaggregation: P prefill replicas, a link, D decode replicas.

Each role's replicas replay their own role's plan (`--disaggregation-mode prefill|decode`,
`kvledger.sglang.roles`: the decode server's pools, radix cache off and extra rows). A
request's life, in three replays:

1. Prefill fleet (`run.simulate_fleet`, the router asked for): the request with one output
   token: the prompt is computed (prefix cache, chunked prefill, queueing as in any
   replica) and its first token sampled.
2. The link (`links`): its KV and one hybrid state move, rank to rank, in
   `latency + (prompt × token_bytes + slot_bytes) / bandwidth` after that first token.
3. Decode fleet (least-load: the decode servers hold no prefix cache to aim at): the request
   arrives when its transfer ends, holds its prompt's pages and a state slot from the decode
   plan's pools, and decodes its output tokens. Receiving costs no compute: a step's time is
   the decode step's alone (`ReceivedKv`), and the whole prompt is taken in one step. The
   decode replicas replay with prompt keys no other request shares (SGLang's decode server
   caches nothing to reuse: its radix cache is off), their capacity the decode plan's.

TTFT is arrival → the decode server's first step with the request (its first token is
streamed from there); TPOT is the decode fleet's. The aggregated fleet to compare with is
P + D replicas of the aggregated plan behind the same router (`simulate --replicas P+D`).

Not modelled: the prefill server holding a request's pages until its transfer ends, transfer
contention between requests on one link, and DP attention.

>>> unique_segments(3, 700_000)
((2199023255744, 2199023255745), (524287, 175713))
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from kvledger.sglang.deploy import MambaStrategy
from kvledger.sglang.plan import SglangPlan
from kvledger.sim.config import SimConfig
from kvledger.sim.fleet.links import Link, request_bytes_per_rank
from kvledger.sim.fleet.routers import RouterKind
from kvledger.sim.fleet.run import FleetResult, simulate_fleet
from kvledger.sim.metrics import RequestRecord
from kvledger.sim.timing import StepWork
from kvledger.sim.workload import (
    MAX_SEGMENT_TOKENS,
    PROMPT_SEGMENT_LIMIT,
    Request,
    Workload,
    WorkloadError,
)

DECODE_SEGMENT_BASE = PROMPT_SEGMENT_LIMIT // 2  # above any trace's or generator's ids
SEGMENTS_PER_REQUEST = 64
DECODE_ROUTER = RouterKind.LEAST_LOAD


class ReceivedKv:
    """A decode server's step time: a prompt arriving by transfer costs no compute, so a step
    costs what its decoding requests cost (nothing when none decodes)."""

    def __init__(self, inner) -> None:
        self.inner = inner

    def step_ms(self, work: StepWork) -> float:
        if not work.decode_contexts and not work.transfer_bytes:
            return 0.0
        return self.inner.step_ms(StepWork(decode_contexts=work.decode_contexts,
                                           transfer_bytes=work.transfer_bytes))


def unique_segments(rid: int, prompt_tokens: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Segments no other request shares, `prompt_tokens` long in all."""
    step = MAX_SEGMENT_TOKENS - 1
    sizes = [step] * (prompt_tokens // step) + ([prompt_tokens % step] if prompt_tokens % step
                                                 else [])
    if len(sizes) > SEGMENTS_PER_REQUEST:
        raise WorkloadError(f"request {rid}: {prompt_tokens:,} prompt tokens; the decode "
                            "replay takes prompts of at most "
                            f"{SEGMENTS_PER_REQUEST * step:,}")
    base = DECODE_SEGMENT_BASE + rid * SEGMENTS_PER_REQUEST
    return tuple(base + i for i in range(len(sizes))), tuple(sizes)


@dataclass(frozen=True, slots=True, kw_only=True)
class PdResult:
    workload: Workload
    router: RouterKind
    link: Link
    prefill: FleetResult
    decode: FleetResult
    records: tuple[RequestRecord, ...]  # finished end to end: arrival is the user's
    transfer_ms: tuple[float, ...]  # per transferred request, in decode arrival order
    transfer_bytes: int  # every rank's bytes over every transfer
    duration_ms: float

    def check_integrity(self) -> None:
        assert len(self.records) <= len(self.workload.requests)
        assert len({r.rid for r in self.records}) == len(self.records), "served twice"
        assert all(r.first_token_ms >= r.arrival_ms for r in self.records)


def _decode_plan(plan: SglangPlan) -> SglangPlan:
    """The decode plan with its pools, replayable: the replay keys every prompt uniquely, so
    a prefix cache finds nothing, as SGLang's radix-off decode server (`module doc`)."""
    dep = plan.layout.deployment
    if not dep.disaggregation_mode.is_decode:
        raise WorkloadError("--decode-replicas: the decode plan must be a decode server's")
    # radix off also turned extra_buffer's track slots off (one held slot per request): the
    # replay's exact checkpoints keep that slot economy (a resolved strategy other than
    # extra_buffer; `cache.accounting.checkpoint_mode`)
    layout = replace(plan.layout, deployment=replace(
        dep, disable_radix_cache=False, mamba_strategy=MambaStrategy.AUTO))
    return replace(plan, layout=layout)


def simulate_pd(prefill_plan: SglangPlan, decode_plan: SglangPlan, workload: Workload,
                config: SimConfig | None = None, *, prefill_replicas: int,
                decode_replicas: int, router: RouterKind, link: Link) -> PdResult:
    """Replay `workload` through P prefill replicas, `link` and D decode replicas."""
    config = config or SimConfig()
    if prefill_plan.layout.deployment.tp_size != decode_plan.layout.deployment.tp_size:
        raise WorkloadError("--prefill-replicas/--decode-replicas: both roles take the same "
                            "--tp (rank i sends its shard to rank i)")
    first = Workload(name=workload.name, requests=tuple(
        replace(r, output_tokens=1) for r in workload.requests))
    pf = simulate_fleet(prefill_plan, first, config, replicas=prefill_replicas, router=router)
    prefilled = {rec.rid: rec for res in pf.replicas for rec in res.requests}
    cap = prefill_plan.capacity
    arriving, moved, by_rid = [], 0, {r.rid: r for r in workload.requests}
    for rid, rec in prefilled.items():
        request = by_rid[rid]
        nbytes = request_bytes_per_rank(request.prompt_tokens, token_bytes=cap.token_bytes,
                                        slot_bytes=cap.slot_bytes)
        moved += nbytes * prefill_plan.layout.deployment.tp_size
        ms = link.transfer_ms(nbytes)
        ids, sizes = unique_segments(rid, request.prompt_tokens)
        arriving.append((rec.first_token_ms + ms, rid, ms, Request(
            rid=rid, arrival_ms=rec.first_token_ms + ms, segment_ids=ids, segment_tokens=sizes,
            output_tokens=max(request.output_tokens, 1))))
    arriving.sort(key=lambda a: (a[0], a[1]))
    longest = max((r.prompt_tokens for r in workload.requests), default=0)
    page = decode_plan.layout.page_tokens
    whole = max(config.chunked_prefill_tokens, math.ceil(longest / page) * page)
    dec_config = replace(config, chunked_prefill_tokens=whole)
    df = simulate_fleet(_decode_plan(decode_plan),
                        Workload(name=workload.name, requests=tuple(a[3] for a in arriving)),
                        dec_config, replicas=decode_replicas, router=DECODE_ROUTER,
                        wrap_timer=ReceivedKv)
    records = []
    for res in df.replicas:
        for rec in res.requests:
            p = prefilled[rec.rid]
            records.append(replace(rec, arrival_ms=by_rid[rec.rid].arrival_ms,
                                   hit_tokens=p.hit_tokens,
                                   usable_hit_tokens=p.usable_hit_tokens))
    records.sort(key=lambda r: r.rid)
    result = PdResult(workload=workload, router=router, link=link, prefill=pf, decode=df,
                      records=tuple(records), transfer_ms=tuple(a[2] for a in arriving),
                      transfer_bytes=moved,
                      duration_ms=max(r.summary.duration_ms for r in df.replicas))
    result.check_integrity()
    return result
