"""Routing policies: which replica serves a request, decided once, at its arrival.

Each router sees a `ReplicaView` per replica, read at the arrival (after every step that
started before it): its outstanding requests, the KV pages they hold or will hold, its KV
usage, and on demand the prefix depths its device cache holds for the prompt (`probe`).

  round-robin     SGLang router `RoundRobinPolicy` (sgl-router/src/policies/round_robin.rs):
                  the next worker in turn.
  least-load      shortest queue: the worker with the fewest outstanding requests, first on
                  ties (the fallback of `CacheAwarePolicy::select_worker`).
  prefix-aware    SGLang router `CacheAwarePolicy::select_worker` (policies/cache_aware.rs),
                  defaults of `RouterConfig` (sgl-router/src/config/types.rs): cache_threshold
                  0.3, balance_abs_threshold 64, balance_rel_threshold 1.5. Imbalanced when
                  max − min load > 64 and max > 1.5 · min (load: outstanding requests):
                  shortest queue; else the approximate tree's best match if its match rate
                  exceeds 0.3, else the tenant with the smallest tree. The tree learns every
                  routed request either way.
  kv-aware        Dynamo's KV router (ai-dynamo/dynamo lib/llm/src/kv_router/scheduler.rs,
                  `DefaultWorkerSelector::select_worker`): per worker
                  logit = overlap_score_weight · prefill_blocks + decode_blocks, lowest wins;
                  prefill_blocks = the prompt's pages not on that worker (overlap from KV
                  events, here the device cache itself), decode_blocks = pages its active
                  requests hold plus this request's; overlap_score_weight 1.0 and router
                  temperature 0 (deterministic) are the defaults (`KvRouterConfig`); ties go
                  to the first worker (Dynamo picks among them at random).
  precise-prefix  llm-d's precise prefix-cache scorer (llm-d/llm-d-kv-cache
                  pkg/kvcache/kvblock_scorer.go `LongestPrefixScorer`: consecutive cached
                  blocks from the first) in the inference scheduler's weighted sum with
                  the queue scorer and the KV-cache-utilization scorer, weights 2 / 1 / 1 as
                  in llm-d's precise-prefix-cache-aware guide; each score min-max normalised
                  over the workers (all equal → 1), max-score picker, first on ties.
  state-aware     kvledger's: Dynamo's logit with the overlap counted only as deep as the
                  worker also holds a linear-attention state (`usable_pages`): KV without its
                  state is recomputed, so it saves nothing.

>>> ROUTERS[RouterKind.ROUND_ROBIN](2).name
'round-robin'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum

import numpy as np

from kvledger.sim.fleet.approx_tree import ApproxTree
from kvledger.sim.fleet.probe import PrefixDepth
from kvledger.sim.workload import Request

# SGLang router defaults (sgl-router/src/config/types.rs, `RouterConfig::default`)
CACHE_THRESHOLD = 0.3
BALANCE_ABS_THRESHOLD = 64
BALANCE_REL_THRESHOLD = 1.5
OVERLAP_SCORE_WEIGHT = 1.0  # Dynamo `KvRouterConfig::default`
LLMD_WEIGHTS = (2.0, 1.0, 1.0)  # llm-d guide: precise-prefix-cache, queue, kv-cache-utilization


class RouterKind(Enum):
    ROUND_ROBIN = "round-robin"
    LEAST_LOAD = "least-load"
    PREFIX_AWARE = "prefix-aware"
    KV_AWARE = "kv-aware"
    PRECISE_PREFIX = "precise-prefix"
    STATE_AWARE = "state-aware"


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicaView:
    """One replica as the router sees it at an arrival."""

    outstanding_requests: int  # routed here, not finished
    active_pages: int  # KV pages those requests hold (or will, for the queued)
    kv_usage: float  # pages requests own / the pool's pages
    probe: Callable[[], PrefixDepth]  # the prompt's cached depths here (computed on demand)


class Router:
    name = ""

    def __init__(self, num_replicas: int) -> None:
        self.num_replicas = num_replicas
        self.count = 0

    def choose(self, request: Request, page_keys: np.ndarray,
               views: Sequence[ReplicaView]) -> int:
        raise NotImplementedError


class RoundRobin(Router):
    name = RouterKind.ROUND_ROBIN.value

    def choose(self, request, page_keys, views):
        self.count += 1
        return (self.count - 1) % self.num_replicas


def _shortest(views: Sequence[ReplicaView]) -> int:
    return min(range(len(views)), key=lambda i: views[i].outstanding_requests)


class LeastLoad(Router):
    name = RouterKind.LEAST_LOAD.value

    def choose(self, request, page_keys, views):
        return _shortest(views)


class PrefixAware(Router):
    name = RouterKind.PREFIX_AWARE.value

    def __init__(self, num_replicas: int) -> None:
        super().__init__(num_replicas)
        self.tree = ApproxTree(num_replicas)

    def choose(self, request, page_keys, views):
        self.count += 1
        loads = [v.outstanding_requests for v in views]
        high, low = max(loads), min(loads)
        keys = page_keys.tolist()
        if high - low > BALANCE_ABS_THRESHOLD and high > low * BALANCE_REL_THRESHOLD:
            pick = _shortest(views)
        else:
            matched, tenant = self.tree.prefix_match(keys)
            rate = matched / len(keys) if keys else 0.0
            pick = tenant if tenant is not None and rate > CACHE_THRESHOLD \
                else self.tree.smallest_tenant()
        self.tree.insert(keys, tenant=pick, at=self.count)
        return pick


def _dynamo_logits(request: Request, page_tokens: int, views: Sequence[ReplicaView],
                   overlap: Callable[[PrefixDepth], int]) -> list[float]:
    prompt_pages = request.prompt_tokens / page_tokens
    request_pages = request.prompt_tokens // page_tokens
    return [OVERLAP_SCORE_WEIGHT * (prompt_pages - overlap(v.probe()))
            + v.active_pages + request_pages for v in views]


class KvAware(Router):
    name = RouterKind.KV_AWARE.value

    def __init__(self, num_replicas: int, page_tokens: int = 1) -> None:
        super().__init__(num_replicas)
        self.page_tokens = page_tokens

    def choose(self, request, page_keys, views):
        logits = _dynamo_logits(request, self.page_tokens, views, self.overlap)
        return min(range(len(views)), key=lambda i: logits[i])

    @staticmethod
    def overlap(depth: PrefixDepth) -> int:
        return depth.kv_pages


class StateAware(KvAware):
    name = RouterKind.STATE_AWARE.value

    @staticmethod
    def overlap(depth: PrefixDepth) -> int:
        return depth.usable_pages


def _minmax(values: Sequence[float]) -> list[float]:
    low, high = min(values), max(values)
    return [1.0] * len(values) if high == low else [(v - low) / (high - low) for v in values]


class PrecisePrefix(Router):
    name = RouterKind.PRECISE_PREFIX.value

    def choose(self, request, page_keys, views):
        prefix = _minmax([float(v.probe().kv_pages) for v in views])
        queue = [1.0 - s for s in _minmax([float(v.outstanding_requests) for v in views])]
        if len(set(v.outstanding_requests for v in views)) == 1:
            queue = [1.0] * len(views)
        usage = [1.0 - v.kv_usage for v in views]
        w_prefix, w_queue, w_usage = LLMD_WEIGHTS
        scores = [w_prefix * p + w_queue * q + w_usage * u
                  for p, q, u in zip(prefix, queue, usage, strict=True)]
        return max(range(len(views)), key=lambda i: (scores[i], -i))


ROUTERS: dict[RouterKind, type[Router]] = {
    RouterKind.ROUND_ROBIN: RoundRobin, RouterKind.LEAST_LOAD: LeastLoad,
    RouterKind.PREFIX_AWARE: PrefixAware, RouterKind.KV_AWARE: KvAware,
    RouterKind.PRECISE_PREFIX: PrecisePrefix, RouterKind.STATE_AWARE: StateAware,
}


def make_router(kind: RouterKind, num_replicas: int, page_tokens: int) -> Router:
    cls = ROUTERS[kind]
    return cls(num_replicas, page_tokens) if issubclass(cls, KvAware) else cls(num_replicas)
