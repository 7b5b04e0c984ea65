"""The store tier in the tiny engine, against every real backend: prefixes evicted from
device and host come back from the store bit for bit; policies decide what is written."""

from __future__ import annotations

import uuid

import pytest

from kvledger.engine.memory import HostTier, PoolSizes, StoreTierSpec
from kvledger.host.policy import BackupPolicy
from kvledger.store.local_dir import LocalDirStore
from store.store_harness import (
    CFG,
    SIZES,
    SMALL_HOST,
    assert_nothing_leaked,
    identical,
    run,
    script,
    serve,
)


def test_revisits_restore_from_the_store_bit_identical(backend):
    """revisit: four system prompts, then the four again. Device (8 pages) and host (4
    pages) have dropped the first ones by the second visit, so the store serves them."""
    spec = StoreTierSpec(backend=backend, salt=uuid.uuid4().hex)
    outs, cache = run(spec, script(), host=SMALL_HOST)
    stats = cache.cache.store.stats
    assert identical(outs)
    assert stats.restored_groups >= 2 and stats.restored_pages >= 6
    assert stats.groups_committed >= 4 and stats.write_errors == 0
    assert_nothing_leaked(cache)


def test_a_second_engine_hits_the_first_ones_prefixes(backend):
    sc, salt = script(), uuid.uuid4().hex  # a namespace of its own on the shared server
    run(StoreTierSpec(backend=backend, salt=salt), sc)
    outs, cache = run(StoreTierSpec(backend=backend, salt=salt), sc)  # a new tree
    stats = cache.cache.store.stats
    assert identical(outs)
    # Every first visit is served by the store now: each prompt has 3 whole pages cached.
    assert stats.restored_pages >= 4 * 3 and stats.misses == 0
    assert_nothing_leaked(cache)


def test_selective_writes_on_the_second_hit_only(tmp_path):
    backend = LocalDirStore(tmp_path)
    sc = script("shared-system")  # every system prompt is inserted, then hit again
    outs, cache = run(StoreTierSpec(backend=backend, policy=BackupPolicy.WRITE_THROUGH_SELECTIVE),
                      sc, sizes=PoolSizes(num_pages=64, num_state_slots=16,
                                          max_running_requests=2))
    tier = cache.cache.store
    assert identical(outs, "shared-system")
    assert tier.stats.groups_committed > 0
    once = [n for n, hits in tier.hits.items() if hits == 1 and n.alive]
    assert once, "some node was inserted and never hit again"
    from kvledger.cache.l3_tier import path_tokens
    from kvledger.store.keys import ObjectKind, object_key, page_keys
    ns = tier.groups.namespace
    for node in once:
        keys = page_keys(ns, path_tokens(node), page_tokens=16)
        assert not backend.exists([object_key(ns, keys[-1], ObjectKind.MANIFEST)])[0]


@pytest.mark.parametrize("num_pages, written", [(64, False), (8, True)])
def test_write_back_writes_what_eviction_takes(tmp_path, num_pages, written):
    sc = script()
    spec = StoreTierSpec(backend=LocalDirStore(tmp_path), policy=BackupPolicy.WRITE_BACK)
    outs, cache = run(spec, sc, sizes=PoolSizes(num_pages=num_pages, num_state_slots=16,
                                                max_running_requests=2))
    stats = cache.cache.store.stats
    assert identical(outs)
    assert (stats.groups_committed > 0) is written
    if not written:
        assert cache.cache.stats.evicted_tokens == 0
    assert_nothing_leaked(cache)


def test_write_back_groups_restore_in_a_second_engine(tmp_path):
    sc = script()
    spec = StoreTierSpec(backend=LocalDirStore(tmp_path), policy=BackupPolicy.WRITE_BACK)
    run(spec, sc, host=HostTier(num_pages=4, num_state_slots=4, policy=BackupPolicy.WRITE_BACK))
    outs, cache = run(spec, sc)
    assert identical(outs) and cache.cache.store.stats.restored_pages > 0


def test_a_corrupt_group_counts_as_broken_not_as_a_plain_miss(tmp_path):
    """The only group of a prompt has one flipped bit: the read skips it (broken), restores
    nothing (a miss) and forgets it, so the prefix is recomputed and written again."""
    import numpy as np

    from kvledger.engine.cached import prefix_cache
    from kvledger.store.keys import ObjectKind, object_key, page_keys

    tokens = np.random.default_rng(7).integers(0, 256, 54).astype(np.int64)
    spec = StoreTierSpec(backend=LocalDirStore(tmp_path), salt=uuid.uuid4().hex)
    first = prefix_cache(CFG, SIZES, store=spec)
    serve(first.cache, tokens)
    first.cache.store.close()
    ns = first.cache.store.groups.namespace
    victim = tmp_path / object_key(ns, page_keys(ns, tokens, page_tokens=16)[1], ObjectKind.KV)
    bad = bytearray(victim.read_bytes())
    bad[100] ^= 0x01
    victim.write_bytes(bytes(bad))
    cache = prefix_cache(CFG, SIZES, store=spec)
    tier = cache.cache.store
    assert serve(cache.cache, tokens).usable_hit_tokens == 0
    st = tier.stats
    assert (st.prefetches, st.broken_groups, st.misses, st.restored_pages) == (1, 1, 1, 0)
    tier.flush()
    assert st.groups_committed == 1  # recomputed, and written again (overwriting the bad page)
    third = prefix_cache(CFG, SIZES, store=spec).cache
    assert serve(third, tokens).usable_hit_tokens == 48
    third.store.close()
    tier.close()
    assert_nothing_leaked(cache)
