"""The facade in accounting mode for one rank of a capacity plan (the simulator's cache).

Sized from the plan, per rank: T / P token pages, K state slots, N request rows; the tree
keys whole pages and saves states on the grid lcm(linear chunk, P) tokens; a running request
holds the plan's ``held_slots_per_request``. A dense model (no linear layers) gets the facade
without a state component. Nothing here imports torch; the host tier, when the plan enables
it, does (its meta-device pools), and is imported only then.

>>> from kvledger.sglang.deploy import Deployment, KVDtype
>>> from kvledger.sglang.plan import make_plan
>>> cache = accounting_cache(make_plan(deployment=Deployment(kv_cache_dtype=KVDtype.FP8_E4M3)))
>>> cache.rows.pages.capacity, cache.states.capacity, cache.held_slots, cache.mode.value
(121573, 343, 3, 'extra_buffer')
>>> dense = accounting_cache(make_plan(model="llama-3.1-8b"))
>>> dense.states is None, dense.held_slots, dense.mode.value, dense.tree.has_state
(True, 0, 'none', False)
"""

from __future__ import annotations

from math import lcm

from kvledger.cache.hybrid import HybridCache
from kvledger.cache.page_rows import PageRows
from kvledger.cache.policies import StatePolicies
from kvledger.cache.seq import CheckpointMode
from kvledger.host.policy import BackupPolicy
from kvledger.host.state_backup import HostStateBackup
from kvledger.pools.ids import StateSlotAllocator
from kvledger.sglang.deploy import MambaStrategy
from kvledger.sglang.plan import SglangPlan
from kvledger.tree import FULL_ONLY, RadixTree

MAMBA_CHUNK_TOKENS = 64  # the linear-attention chunk of GLM-5.3-Flash's KDA layers


def checkpoint_mode(plan: SglangPlan) -> CheckpointMode:
    lay = plan.layout
    if lay.state is None:
        return CheckpointMode.NONE
    if lay.deployment.mamba_strategy is MambaStrategy.EXTRA_BUFFER:
        return CheckpointMode.TRACKED
    return CheckpointMode.EXACT


def accounting_cache(plan: SglangPlan, *, mamba_chunk_tokens: int = MAMBA_CHUNK_TOKENS,
                     track_interval_tokens: int | None = None,
                     host_policy: BackupPolicy | None = None,
                     policies: StatePolicies | None = None,
                     host_state_backup: HostStateBackup = HostStateBackup.ALL) -> HybridCache:
    """`host_policy`: the host tier's write policy when the plan enables the host tier
    (--enable-hierarchical-cache); None then means write_through, SGLang's default.
    `host_state_backup`: which states get host room (`kvledger.host.state_backup`)."""
    lay, cap = plan.layout, plan.capacity
    page = lay.page_tokens
    grid = lcm(mamba_chunk_tokens, page)
    mode = checkpoint_mode(plan)
    if mode is CheckpointMode.NONE:  # SGLang's RadixCache: every cached node is a match point
        tree = RadixTree(page_size=1, components=FULL_ONLY)
    else:
        tree = RadixTree(page_size=1, mamba_chunk_tokens=grid // page)
    rows = PageRows(num_pages=cap.max_total_tokens // page, page_tokens=page,
                    num_rows=cap.max_running_requests)
    states = None if mode is CheckpointMode.NONE else StateSlotAllocator(num_slots=cap.state_slots)
    host = None
    if lay.deployment.enable_hierarchical_cache:
        from kvledger.cache.hicache_tier import HiCacheTier

        host = HiCacheTier.for_plan(plan, host_policy or BackupPolicy.WRITE_THROUGH, tree,
                                    rows.allocator, states, state_backup=host_state_backup)
    return HybridCache(rows=rows, tree=tree, states=states,
                       held_slots_per_request=lay.held_slots_per_request, mode=mode,
                       track_interval_tokens=track_interval_tokens, host=host,
                       policies=policies)
