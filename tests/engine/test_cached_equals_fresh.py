"""The proof: outputs served from our cache equal a cache-free run, token for token, bit for bit.

Every workload runs twice on the same seeded model and engine loop, once through
HybridCache (prefix matching, copy-on-write states, chunk inserts, eviction, host backup and
loadback) and once cache-free; tokens and logits must be identical (``torch.equal``). No
tolerance is needed: the model's arithmetic is fixed-order (``kvledger.engine.fixed``), so a
value depends only on its operands, never on batch, chunk or which run computed it.
Integrity (tree, pools, host tier, page and slot conservation) is checked after every call
the engine makes into the cache.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from engine.engine_factories import CheckedCache, tiny_model
from kvledger.engine.cached import prefix_cache
from kvledger.engine.loop import Engine
from kvledger.engine.memory import HostTier
from kvledger.engine.script import run_script
from kvledger.engine.verify import verify
from kvledger.engine.workloads import WORKLOADS
from kvledger.host.layout import HostLayout
from kvledger.host.policy import BackupPolicy
from kvledger.store.backend import BackendKind
from kvledger.store.servers import find_binary


def checked_verify(workload):
    report = verify(workload, wrap=CheckedCache)
    assert report.requests == workload.script().num_requests
    assert report.all_match, f"{workload.name}: requests {report.mismatched} differ"
    return report


# What each workload must have exercised, so that its match is not vacuous.
EXERCISED = {
    "tiny-pools": lambda r: r.evicted_tokens >= 8 * 16,  # more than the whole device pool
    "branching": lambda r: r.branch_states >= 1,
    "coarse-grid": lambda r: r.branch_states >= 1,
    "bf16": lambda r: r.loadback_tokens > 0,
    **{f"host-{p.value.replace('_', '-')}": (lambda r: r.loadback_tokens > 0
                                             and r.loadback_failures == 0)
       for p in BackupPolicy},
}


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_every_named_workload_matches_the_cache_free_run(name):
    kind = WORKLOADS[name].store
    if kind is not None and kind is not BackendKind.LOCAL_DIR and find_binary(kind) is None:
        pytest.skip(f"{name}: no {kind.value} server binary here (.ci/run installs it)")
    report = checked_verify(WORKLOADS[name])
    assert report.cached_prompt_tokens > 0, "the cache served nothing: a vacuous match"
    assert EXERCISED.get(name, lambda r: True)(report), report


def test_shared_system_prompts_are_served_from_the_cache():
    """Which prompt tokens each request of `shared-system` took from the cache.

    Requests 0-5 are three questions on system A then three on system B (48 tokens each), at
    most 4 running, a 32-token prefill budget per step; 6-9 are the second wave (6, 7 on A,
    8, 9 on B). Requests 0-3 start together on an empty cache. Request 4 is admitted when
    request 0 finishes, before request 3 (system B) has saved anything; request 5 comes after
    request 3's first chunk was cached unfinished at its 32-token boundary. Each running
    request holds 3 of the 16 state slots (SGLang's working slot and ping-pong pair), so with
    4 running the tree keeps at most 4 states: system A's were evicted (least recently used)
    while system B ran, and the second wave reuses system B's three whole pages only.
    """
    workload = WORKLOADS["shared-system"]
    cache = CheckedCache(prefix_cache(workload.config, workload.sizes))
    engine = Engine(tiny_model(workload.config), cache, chunk_tokens=workload.chunk_tokens,
                    max_running_requests=workload.max_running_requests)
    out = run_script(engine, workload.script(), workload.max_new_tokens)
    assert [g.cached_prompt_tokens for g in out] == [0, 0, 0, 0, 0, 32, 0, 0, 48, 48]


def test_a_layer_first_host_layout_matches():
    base = WORKLOADS["host-write-back"]
    host = replace(base.host, layout=HostLayout.LAYER_FIRST)
    assert checked_verify(replace(base, host=host)).loadback_tokens > 0


def test_chunks_that_cut_pages_and_kpool_groups_match():
    # Page 16, kpool 4: a 13-token chunk ends mid-page and mid-group every time.
    checked_verify(replace(WORKLOADS["branching"], chunk_tokens=13))


def test_the_articles_indexer_defect_reproduced():
    """sglang-0.5.21's hybrid HostPoolGroup had KV and MAMBA entries but no INDEXER: after a
    loadback the request's KV is right and its index keys are whatever the device pages held.
    Same workload, same host tier, only the INDEXER pool removed: the outputs differ."""
    base = WORKLOADS["host-write-through"]  # matches with the INDEXER pool (test above)
    article = verify(replace(base, host=replace(base.host, reproduce_missing_indexer_defect=True)))
    assert article.loadback_tokens > 0 and not article.all_match
    # Only requests that loaded back can differ; the first visit of each prompt is fresh.
    assert set(article.mismatched) <= set(range(4, 8))


def test_a_host_tier_without_room_still_matches():
    base = WORKLOADS["host-write-back"]
    small = replace(base, host=HostTier(num_pages=3, num_state_slots=1,
                                        policy=BackupPolicy.WRITE_BACK))
    checked_verify(small)
