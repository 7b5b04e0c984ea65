"""Store writes that fail: a manifest never follows a refused object, and every exception on
the way of a write (into the store, or of restored bytes into the device) leaves the cache
consistent — what it took is released, then the error propagates — and nothing leaks."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from kvledger.engine.cached import prefix_cache
from kvledger.engine.memory import PoolSizes, StoreTierSpec
from kvledger.host.policy import BackupPolicy
from kvledger.store.backend import StoreBackend
from kvledger.store.group import group_write
from kvledger.store.keys import Namespace, ObjectKind, page_keys
from kvledger.store.local_dir import LocalDirStore
from kvledger.store.transfer import read_prefix, write_group
from store.store_harness import CFG, SIZES, assert_nothing_leaked, run, script, serve

ERRORS = [ValueError, KeyboardInterrupt]
PROMPT = 54  # 3 whole 16-token pages cached, 4 pages while it runs


class RefuseKind(StoreBackend):
    """Refuses (put → False, nothing stored) every object of one kind, around a real client."""

    def __init__(self, inner: StoreBackend, kind: ObjectKind) -> None:
        self.inner, self.refused, self.kind = inner, kind, inner.kind

    def exists(self, keys):
        return self.inner.exists(keys)

    def get(self, keys, sizes=None):
        return self.inner.get(keys, sizes)

    def put(self, items):
        suffix = ":" + self.refused.value
        keep = [(k, v) for k, v in items if not k.endswith(suffix)]
        done = iter(self.inner.put(keep))
        return [False if k.endswith(suffix) else next(done) for k, _ in items]

    def delete(self, keys):
        return self.inner.delete(keys)


class Failing:
    """A tier's `GroupStore` whose `write` or `install` raises `error` on its `nth` call."""

    def __init__(self, inner, *, error: type[BaseException], write_at: int = 0,
                 install_at: int = 0) -> None:
        self.inner, self.error = inner, error
        self.write_at, self.install_at = write_at, install_at
        self.writes = self.installs = 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def write(self, *args, **kwargs):
        self.writes += 1
        if self.writes == self.write_at:
            raise self.error("store write failed (injected)")
        return self.inner.write(*args, **kwargs)

    def install(self, *args, **kwargs):
        self.installs += 1
        if self.installs == self.install_at:
            raise self.error("restored bytes not written (injected)")
        return self.inner.install(*args, **kwargs)


def _tokens(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, PROMPT).astype(np.int64)


# ---- the manifest comes last -------------------------------------------------------------


@pytest.mark.parametrize("refused", [ObjectKind.KV, ObjectKind.STATE])
def test_a_refused_object_leaves_no_manifest(backend, refused):
    """write_group puts the manifest only once every object was stored: a reader never
    sees a group whose objects are not all there."""
    ns = Namespace(model="m", layout="l", salt=uuid.uuid4().hex)
    keys = page_keys(ns, range(32), page_tokens=16)
    group = group_write(ns, keys, first_page=0, pages=[b"a" * 64, b"b" * 64], state=b"s" * 100)
    assert write_group(RefuseKind(backend, refused), group) is False
    assert backend.exists([group.manifest[0]]) == [False]
    assert not read_prefix(backend, ns, keys, start_page=0).found


def test_the_tier_commits_no_group_whose_objects_were_refused(tmp_path):
    raw = LocalDirStore(tmp_path)
    _, cache = run(StoreTierSpec(backend=RefuseKind(raw, ObjectKind.STATE)), script())
    tier = cache.cache.store
    assert tier.stats.groups_queued >= 4
    assert tier.stats.groups_refused == tier.stats.groups_queued and not tier.committed
    assert not any(p.name.endswith(":mf") for p in tmp_path.iterdir())
    ns = tier.groups.namespace
    for wave in script().waves:
        keys = page_keys(ns, wave[0].tokens, page_tokens=16)
        assert not read_prefix(raw, ns, keys, start_page=0).found


# ---- exceptions on the way of a write ----------------------------------------------------


def _cache(tmp_path, salt: str, *, policy=BackupPolicy.WRITE_THROUGH, sizes=SIZES):
    spec = StoreTierSpec(backend=LocalDirStore(tmp_path), salt=salt, policy=policy)
    return prefix_cache(CFG, sizes, store=spec)


@pytest.mark.parametrize("error", ERRORS)
def test_a_failed_write_on_insert_leaves_the_cache_consistent(tmp_path, error):
    cache = _cache(tmp_path, uuid.uuid4().hex)
    hybrid, tier = cache.cache, cache.cache.store
    tier.groups = Failing(tier.groups, error=error, write_at=1)
    tokens = _tokens(1)
    seq = hybrid.admit(tokens, prompt_tokens=PROMPT, final_tokens=PROMPT)
    hybrid.extend(seq, PROMPT)
    with pytest.raises(error):
        hybrid.commit(seq, tokens, PROMPT, cache_unfinished=True)
    hybrid.check_integrity()  # the insert is booked; only its group was not queued
    assert tier.stats.groups_queued == 0 and not tier.writing
    hybrid.release(seq, tokens)
    hybrid.check_integrity()
    # The prefix is cached on device; its next hit backs it up (write-through), committed.
    again = serve(hybrid, tokens)
    assert again.usable_hit_tokens == 48
    tier.flush()
    assert tier.stats.groups_committed == 1
    tier.close()
    assert_nothing_leaked(cache)


@pytest.mark.parametrize("error", ERRORS)
def test_a_failed_restore_frees_its_pages_and_slot(tmp_path, error):
    salt, tokens = uuid.uuid4().hex, _tokens(2)
    first = _cache(tmp_path, salt)
    serve(first.cache, tokens)
    first.cache.store.close()
    cache = _cache(tmp_path, salt)  # a new tree: the prefix is only in the store
    hybrid, tier = cache.cache, cache.cache.store
    tier.groups = Failing(tier.groups, error=error, install_at=1)
    free_pages, free_slots = hybrid.rows.num_free_pages, hybrid.states.num_free
    with pytest.raises(error):
        hybrid.admit(tokens, prompt_tokens=PROMPT, final_tokens=PROMPT)
    hybrid.check_integrity()
    assert (hybrid.rows.num_free_pages, hybrid.states.num_free) == (free_pages, free_slots)
    assert not hybrid.running and hybrid.tree.sizes().full_evictable_tokens == 0
    assert tier.stats.restored_pages == 0
    seq = hybrid.admit(tokens, prompt_tokens=PROMPT, final_tokens=PROMPT)  # the retry restores
    assert seq.usable_hit_tokens == 48 and tier.stats.restored_pages == 3
    hybrid.extend(seq, PROMPT - 48)
    hybrid.commit(seq, tokens, PROMPT - 48, cache_unfinished=True)
    hybrid.release(seq, tokens)
    tier.close()
    hybrid.check_integrity()
    assert_nothing_leaked(cache)


@pytest.mark.parametrize("error", ERRORS)
def test_a_failed_write_back_at_eviction_leaves_the_cache_consistent(tmp_path, error):
    """write_back writes a node when eviction takes it: 8 device pages hold two cached
    prompts (3 pages each); the third needs 4 pages and evicts the first, whose write fails."""
    cache = _cache(tmp_path, uuid.uuid4().hex, policy=BackupPolicy.WRITE_BACK,
                   sizes=PoolSizes(num_pages=8, num_state_slots=16, max_running_requests=2))
    hybrid, tier = cache.cache, cache.cache.store
    tier.groups = Failing(tier.groups, error=error, write_at=1)
    serve(hybrid, _tokens(3))
    serve(hybrid, _tokens(4))
    tokens = _tokens(5)
    seq = hybrid.admit(tokens, prompt_tokens=PROMPT, final_tokens=PROMPT)
    with pytest.raises(error):
        hybrid.extend(seq, PROMPT)
    hybrid.check_integrity()  # the eviction happened; the request did not grow
    assert hybrid.stats.evicted_tokens >= 48 and seq.allocated_tokens == 0
    assert not tier.writing
    hybrid.extend(seq, PROMPT)  # the retry finds the pages free
    hybrid.commit(seq, tokens, PROMPT, cache_unfinished=True)
    hybrid.release(seq, tokens)
    tier.close()
    hybrid.check_integrity()
    assert_nothing_leaked(cache)
