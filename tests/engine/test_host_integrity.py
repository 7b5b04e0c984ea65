"""A corrupted or narrower host row is detected, never silently used."""

from __future__ import annotations

from dataclasses import replace

import pytest

from engine.engine_factories import CheckedCache, assert_same, first_mismatch, tiny_model
from kvledger.cache import CheckpointMode, HybridCache
from kvledger.cache.hicache_tier import HiCacheTier
from kvledger.cache.token_rows import TokenRows
from kvledger.engine.cached import PrefixCache, prefix_cache
from kvledger.engine.fresh import FreshCache
from kvledger.engine.loop import Engine
from kvledger.engine.memory import HostTier, build_device_pools, build_host_tier
from kvledger.engine.script import Script, run_script
from kvledger.engine.workloads import WORKLOADS
from kvledger.host.kv_pool import HostRowError
from kvledger.tree import RadixTree

WORKLOAD = WORKLOADS["host-write-through"]  # four prompts, then the same four again
SCRIPT = WORKLOAD.script()
FIRST, AGAIN = Script(waves=SCRIPT.waves[:4]), Script(waves=SCRIPT.waves[4:])


def _engine(cache):
    return Engine(tiny_model(WORKLOAD.config), cache, chunk_tokens=WORKLOAD.chunk_tokens,
                  max_running_requests=WORKLOAD.max_running_requests)


@pytest.fixture(scope="module")
def fresh_outputs():
    cache = FreshCache(WORKLOAD.config, max_running_requests=2, max_context_tokens=128)
    return run_script(_engine(cache), SCRIPT, WORKLOAD.max_new_tokens)


def _corrupt_first_backed_up_page(cache) -> None:
    """Overwrite the fp8 scale of the first token of the first host page of system prompt 0
    (bytes 128..131 of a 132-byte row: 128 fp8 codes, then the float32 scale)."""
    tree = cache.tree
    node = next(n for n in tree.root.children.values() if n.full.host_value is not None)
    host = cache.tier.ctrl.host
    page = int(node.full.host_value[0]) // tree.page_size
    host.kv.canonical[page, 0, 0, 128:132] = 0x7F  # a scale of about 3.4e38


def _run_with_corruption(verify_loadbacks: bool):
    cache = prefix_cache(WORKLOAD.config, WORKLOAD.sizes, host=WORKLOAD.host).cache
    if not verify_loadbacks:
        cache.tier.ctrl.transfers.digests = None  # no digests: what a tier without checks does
    engine = _engine(CheckedCache(PrefixCache(cache)))
    first = run_script(engine, FIRST, WORKLOAD.max_new_tokens)
    _corrupt_first_backed_up_page(cache)
    again = run_script(engine, AGAIN, WORKLOAD.max_new_tokens)
    return cache, first + again


def test_a_corrupted_host_page_is_refused_and_recomputed(fresh_outputs):
    cache, outputs = _run_with_corruption(verify_loadbacks=True)
    assert cache.tier.ctrl.verifying  # on by default in the library controller
    assert cache.tier.ctrl.transfers.digests.mismatches == 1
    assert cache.stats.loadback_failures == 1
    assert cache.stats.loadback_tokens > 0  # the other three prompts still loaded back
    assert_same(outputs, fresh_outputs)


def test_without_the_check_the_corrupted_page_reaches_the_output(fresh_outputs):
    cache, outputs = _run_with_corruption(verify_loadbacks=False)
    assert cache.stats.loadback_failures == 0
    assert first_mismatch(outputs, fresh_outputs) == 4  # the revisit of system prompt 0


def test_a_host_row_narrower_than_the_device_row_is_refused():
    # sglang-0.5.21 sized the MLA host row kv_lora_rank + rope wide, dropping the fp8 scales:
    # for the tiny model that is 128 B against a 132 B device row.
    pools = build_device_pools(WORKLOAD.config, WORKLOAD.sizes)
    tree = RadixTree(page_size=WORKLOAD.sizes.page_tokens, mamba_chunk_tokens=16)
    with pytest.raises(HostRowError, match="host KV row of 128 B for a device row of 132 B"):
        build_host_tier(pools, tree, replace(WORKLOAD.host, host_row_bytes=128))


def test_a_host_tier_must_share_the_caches_tree():
    pools = build_device_pools(WORKLOAD.config, WORKLOAD.sizes)
    other = RadixTree(page_size=16, mamba_chunk_tokens=16)
    tier = HiCacheTier(build_host_tier(pools, other, HostTier()), unit_tokens=1)
    with pytest.raises(ValueError, match="share this tree"):
        HybridCache(rows=TokenRows(pools.kv, pools.token_allocator),
                    states=pools.state_allocator, held_slots_per_request=3,
                    mode=CheckpointMode.TRACKED,
                    tree=RadixTree(page_size=16, mamba_chunk_tokens=16), host=tier)
