"""Faults against real servers, each on its own server: every one ends in recomputation
with bit-identical outputs, nothing wrong used and nothing leaked."""

from __future__ import annotations

import shutil
import time

import pytest
import torch

from kvledger.cache.l3_tier import PrefetchTimeout
from kvledger.engine.cached import prefix_cache
from kvledger.engine.loop import Engine
from kvledger.engine.memory import StoreTierSpec
from kvledger.store.backend import BackendKind
from kvledger.store.keys import ObjectKind, object_key, page_keys
from kvledger.store.local_dir import LocalDirStore
from store.conftest import SERVED, launch
from store.faulty import KillDuringGet, SlowGets
from store.store_harness import (
    CFG,
    CHUNK,
    NEW,
    RUNNING,
    SIZES,
    SMALL_HOST,
    assert_nothing_leaked,
    fresh,
    identical,
    model,
    run,
    script,
)

# each case starts its own server; a Mooncake client of a killed master takes seconds to close
pytestmark = pytest.mark.slow

SERVED_IDS = [k.value for k in SERVED]


@pytest.fixture(params=SERVED_IDS)
def own_server(request):
    kind = BackendKind(request.param)
    server = launch(kind)
    clients = []

    def client():
        clients.append(server.backend())
        return clients[-1]
    yield server, client
    for c in clients:
        c.close()
    server.stop()


def _populate(backend):
    """Engine A writes every group of the revisit script; returns its store tier."""
    _, cache = run(StoreTierSpec(backend=backend), script())
    tier = cache.cache.store
    assert tier.stats.groups_committed >= 4
    return tier


def _first_prompt_keys(tier):
    prompt = script().waves[0][0].tokens
    return page_keys(tier.groups.namespace, prompt[:-1], page_tokens=16)


def test_server_killed_mid_transfer(own_server):
    server, client = own_server
    _populate(client())
    dying = KillDuringGet(client(), server, nth=1)
    outs, cache = run(StoreTierSpec(backend=dying), script())
    stats = cache.cache.store.stats
    assert not server.alive
    assert identical(outs)
    # The first read after the kill fails (unavailable), or — on a loaded machine, while the
    # Mooncake client gives up on its master — outlives the 2 s timeout; both recompute.
    assert stats.unavailable + stats.timeouts >= 1 and stats.restored_pages == 0
    assert stats.write_errors + stats.groups_refused == stats.groups_queued > 0
    assert_nothing_leaked(cache)


def test_timeout_recomputes(own_server):
    _, client = own_server
    _populate(client())
    slow = SlowGets(client(), delay_s=0.3)
    spec = StoreTierSpec(backend=slow, timeout=PrefetchTimeout(base_s=0.05, per_ki_token_s=0.0,
                                                               max_s=0.05))
    outs, cache = run(spec, script())
    stats = cache.cache.store.stats
    assert identical(outs)
    assert stats.timeouts >= 1 and stats.restored_pages == 0
    assert cache.cache.store.groups.reads.abandoned == stats.timeouts
    assert_nothing_leaked(cache)


def _replace(backend, key: str, value: bytes) -> None:
    if backend.kind is BackendKind.MOONCAKE:
        time.sleep(0.2)  # past the test master's 50 ms lease, or remove is refused
    assert backend.delete([key]) == [True]
    assert backend.put([(key, value)]) == [True]


def test_corrupted_page_is_a_miss(own_server):
    _, client = own_server
    raw = client()
    tier = _populate(raw)
    keys = _first_prompt_keys(tier)
    victim = object_key(tier.groups.namespace, keys[1], ObjectKind.KV)
    good = raw.get([victim])[0]
    bad = bytearray(good)
    bad[len(bad) // 2] ^= 0x40  # one bit: same size, wrong digest
    _replace(raw, victim, bytes(bad))
    outs, cache = run(StoreTierSpec(backend=client()), script())
    stats = cache.cache.store.stats
    assert identical(outs)
    # The first prompt's group is found broken and skipped (it used to count as a plain miss).
    assert stats.broken_groups >= 1
    # The other three prompts still come from the store.
    assert stats.restored_pages >= 3 * 3
    assert_nothing_leaked(cache)


def test_partial_group_is_a_miss(own_server):
    _, client = own_server
    raw = client()
    tier = _populate(raw)
    keys = _first_prompt_keys(tier)
    state = object_key(tier.groups.namespace, keys[-1], ObjectKind.STATE)
    if raw.kind is BackendKind.MOONCAKE:
        time.sleep(0.2)
    assert raw.delete([state]) == [True]
    outs, cache = run(StoreTierSpec(backend=client()), script())
    stats = cache.cache.store.stats
    assert identical(outs)
    assert stats.broken_groups >= 1
    assert_nothing_leaked(cache)


def test_store_side_eviction_is_a_miss(clients):
    """Redis with 1 MiB of memory evicts (allkeys-lru) while the engine writes: objects
    vanish under committed manifests, and reads of them are misses."""
    server = launch(BackendKind.REDIS, maxmemory_bytes=1 << 20)
    try:
        backend = server.backend()
        sc = script("multi-turn")
        run(StoreTierSpec(backend=backend), sc)
        info = backend.client.info("stats")
        assert info["evicted_keys"] > 0
        outs, cache = run(StoreTierSpec(backend=backend), sc)
        assert identical(outs, "multi-turn")
        assert_nothing_leaked(cache)
        backend.close()
    finally:
        server.stop()


def _waves(engine, cache, prompts):
    """Each prompt alone (as revisit's waves run), its writes acknowledged at the end."""
    outs = [engine.generate([p], NEW)[0] for p in prompts]
    cache.cache.store.flush()
    cache.check_integrity()
    return outs


@pytest.mark.parametrize("kind", ["redis", "local-dir"])
def test_a_store_restarted_empty_between_waves_is_noticed_and_written_again(tmp_path, kind):
    """Wave 1 writes the four system prompts' groups; the server restarts empty; wave 2
    finds them gone (counted, forgotten, recomputed and written again); wave 3 restores
    them. Before, the tier kept the lost groups as committed, never wrote them again, and
    restored nothing after the restart, silently."""
    server = launch(BackendKind.REDIS) if kind == "redis" else None
    backend = server.backend() if server is not None else LocalDirStore(tmp_path / "store")
    try:
        cache = prefix_cache(CFG, SIZES, host=SMALL_HOST, store=StoreTierSpec(backend=backend))
        engine = Engine(model(), cache, chunk_tokens=CHUNK, max_running_requests=RUNNING)
        prompts = [wave[0].tokens for wave in script().waves[:4]]
        ref = fresh()[:4]  # revisit's first four requests, cache-free
        tier = cache.cache.store
        st = tier.stats
        assert same(_waves(engine, cache, prompts), ref)
        written = st.groups_committed
        assert written >= 4 and st.restored_pages == 0
        if server is not None:  # the same port, nothing kept (persistence is off)
            server.stop()
            server = launch(BackendKind.REDIS, port=server.port)
        else:
            shutil.rmtree(tmp_path / "store")
            (tmp_path / "store").mkdir()
        assert same(_waves(engine, cache, prompts), ref)
        # The prompts evicted from device and host looked for their groups and found none.
        assert st.lost_groups >= 2 and st.restored_pages == 0 and st.broken_groups == 0
        assert st.groups_committed >= written + st.lost_groups  # each written again
        assert same(_waves(engine, cache, prompts), ref)
        assert st.restored_pages >= 2 * 3  # wave 3: from the rewritten groups
        tier.close()
        assert_nothing_leaked(cache)
    finally:
        backend.close()
        if server is not None:
            server.stop()


def same(outs, ref) -> bool:
    return len(outs) == len(ref) and all(
        a.token_ids == b.token_ids and torch.equal(a.logits, b.logits)
        for a, b in zip(outs, ref, strict=True))
