"""verify: run a workload with the full cache system and cache-free, and compare.

Both runs use the same seeded model and the same engine loop (chunk size, batch limit); only
the cache differs. Outputs match when every generated token and every logit is bit for bit
equal (``torch.equal``): the model's fixed-order arithmetic (``engine.fixed``) makes that
the right bar, no tolerance.

>>> report = verify(WORKLOADS["branching"])
>>> report.all_match, report.requests, report.cached_prompt_tokens > 0
(True, 6, True)
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import torch

from kvledger.cache.policies import StateAdmission, StateEviction, StatePolicies, build_policies
from kvledger.engine.cached import prefix_cache
from kvledger.engine.fresh import FreshCache
from kvledger.engine.loop import Engine, Generation
from kvledger.engine.model import TinyModel
from kvledger.engine.request import RequestCache
from kvledger.engine.script import run_script
from kvledger.engine.store_setup import store_spec
from kvledger.engine.workloads import WORKLOADS, Workload
from kvledger.host.state_backup import HostStateBackup


@dataclass(frozen=True, slots=True, kw_only=True)
class VerifyReport:
    workload: str
    requests: int
    prompt_tokens: int
    generated_tokens: int
    cached_prompt_tokens: int  # prompt tokens the cached run did not compute
    loadback_tokens: int
    loadback_states: int
    loadback_failures: int
    evicted_tokens: int
    branch_states: int
    store_restored_tokens: int = 0  # tokens restored from the store tier (0 without one)
    store_groups_written: int = 0  # object groups the store tier committed
    host_states_declined: int = 0  # state copies the host state backup rule declined
    mismatched: tuple[int, ...]  # request ids whose tokens or logits differ
    cached_seconds: float
    fresh_seconds: float

    @property
    def all_match(self) -> bool:
        return not self.mismatched

    @property
    def hit_rate(self) -> float:
        return self.cached_prompt_tokens / self.prompt_tokens if self.prompt_tokens else 0.0


def same_output(a: Generation, b: Generation) -> bool:
    return a.token_ids == b.token_ids and torch.equal(a.logits, b.logits)


def engine_policies_for(admission: StateAdmission, eviction: StateEviction, *,
                        page_tokens: int, num_slots: int) -> StatePolicies:
    """State policies over the tiny model's cache. Its state slots are all one size, so
    FLOP-aware eviction ranks states by the FLOPs their prefix saves, stood in by its shape:
    linear work per token plus causal attention pairs (the tiny model is attention-heavy)."""

    def flops_of(pages: int) -> float:
        tokens = pages * page_tokens
        return float(tokens + tokens * (tokens + 1) // 2)

    return build_policies(admission, eviction, flops_of=flops_of, slot_bytes=1, page_bytes=0,
                          num_slots=num_slots)


def named_workload(workload: Workload | str) -> Workload:
    if isinstance(workload, str):
        if workload not in WORKLOADS:
            raise ValueError(f"--workload {workload!r}: expected one of {', '.join(WORKLOADS)}")
        return WORKLOADS[workload]
    return workload


def cache_free_outputs(workload: Workload | str,
                       wrap: Callable[[RequestCache], RequestCache] = lambda cache: cache,
                       ) -> list[Generation]:
    """``workload``'s outputs with no cache at all, the run `verify` compares against: the
    same seeded model and engine loop, so they depend on the workload only."""
    workload = named_workload(workload)
    script = workload.script()
    fresh = FreshCache(workload.config, max_running_requests=workload.max_running_requests,
                       max_context_tokens=max(script.request_tokens(workload.max_new_tokens)),
                       page_tokens=workload.sizes.page_tokens)
    engine = Engine(TinyModel(workload.config), wrap(fresh), chunk_tokens=workload.chunk_tokens,
                    max_running_requests=workload.max_running_requests)
    outputs = run_script(engine, script, workload.max_new_tokens)
    fresh.check_integrity()
    return outputs


def verify(workload: Workload | str,
           wrap: Callable[[RequestCache], RequestCache] = lambda cache: cache, *,
           admission: StateAdmission = StateAdmission.ENGINE,
           eviction: StateEviction = StateEviction.LRU,
           host_state_backup: HostStateBackup = HostStateBackup.ALL,
           reference: Sequence[Generation] | None = None) -> VerifyReport:
    """Run ``workload`` twice and compare; ``wrap`` decorates both caches (tests use it to
    check integrity after every call); ``admission`` / ``eviction`` pick the cached run's
    state policies (`kvledger.cache.policies`; every one must keep outputs identical);
    ``host_state_backup`` which states its host tier copies (`kvledger.host.state_backup`;
    workloads without a host tier ignore it). ``reference``: this workload's
    `cache_free_outputs`, when a caller comparing many cache settings already has them (they
    do not depend on the cache); then the cache-free run is not repeated and
    ``fresh_seconds`` is 0."""
    workload = named_workload(workload)
    script = workload.script()
    longest = max(script.request_tokens(workload.max_new_tokens))
    model = TinyModel(workload.config)
    sizes = replace(workload.sizes, max_context_tokens=max(longest, workload.sizes.max_context_tokens))
    policies = engine_policies_for(admission, eviction, page_tokens=sizes.page_tokens,
                                   num_slots=sizes.num_state_slots)
    with contextlib.ExitStack() as stack:
        spec = (None if workload.store is None else
                stack.enter_context(store_spec(workload.store, what=f"--workload {workload.name}")))
        host = (None if workload.host is None
                else replace(workload.host, state_backup=host_state_backup))
        cache = prefix_cache(workload.config, sizes, host=host,
                             mamba_chunk_tokens=workload.mamba_chunk_tokens, store=spec,
                             policies=policies)
        engine = Engine(model, wrap(cache), chunk_tokens=workload.chunk_tokens,
                        max_running_requests=workload.max_running_requests)
        start = time.perf_counter()
        cached_out = run_script(engine, script, workload.max_new_tokens)
        cached_s = time.perf_counter() - start
        cache.check_integrity()
        stats = engine.stats
        tier = cache.cache.store  # `NoStoreTier` (zero stats) without a store
        tier.close()
    start = time.perf_counter()
    fresh_out = list(reference) if reference is not None else cache_free_outputs(workload, wrap)
    fresh_s = 0.0 if reference is not None else time.perf_counter() - start
    mismatched = tuple(a.rid for a, b in zip(cached_out, fresh_out, strict=True)
                       if not same_output(a, b))
    cs = cache.cache.stats
    host_stats = cache.cache.tier.stats()
    return VerifyReport(
        workload=workload.name, requests=stats.requests, prompt_tokens=stats.prompt_tokens,
        generated_tokens=stats.generated_tokens, cached_prompt_tokens=stats.cached_prompt_tokens,
        loadback_tokens=cs.loadback_tokens, loadback_states=cs.loadback_states,
        loadback_failures=cs.loadback_failures, evicted_tokens=cs.evicted_tokens,
        branch_states=cs.branch_states,
        store_restored_tokens=tier.stats.restored_pages * sizes.page_tokens,
        store_groups_written=tier.stats.groups_committed,
        host_states_declined=0 if host_stats is None else host_stats.declined_state_backups,
        mismatched=mismatched, cached_seconds=cached_s, fresh_seconds=fresh_s,
    )
