"""Faults inside admit, loadback and host backup leave the facade consistent.

Each test injects one fault into a real-bytes cache with a host tier — a copy step (the
transfer queue's fault hook, called before each copy run), a commit step (the tree call that
records a loadback's device values or a backup's host values) or a state copy — raising a
`ValueError` (a programming error: re-raised after the host tier's cleanup) or a
`KeyboardInterrupt`. The error must propagate; afterwards `check_integrity` holds (every
page, slot and lock owned exactly once, reservations and totals adding up), nothing is left
half-admitted or half-released, and the same cache serves the next request.

Copy errors (RuntimeError, OSError, TransferFault) are swallowed by the host tier and
recompute instead; `tests/host/test_exceptions.py` covers those.
"""

from __future__ import annotations

import numpy as np
import pytest

from cache.cache_factories import PAGE, Keys, real_cache, run_request
from kvledger.engine.memory import HostTier
from kvledger.host.policy import BackupPolicy
from kvledger.host.transfer import Direction

ERRORS = [ValueError("injected"), KeyboardInterrupt()]
IDS = ["ValueError", "KeyboardInterrupt"]
PROMPT = np.arange(33) + 1000  # 33 tokens: the release caches 32 (two pages) and their state


def _host_hit_cache(policy: BackupPolicy = BackupPolicy.WRITE_THROUGH):
    """PROMPT cached and backed up, then evicted from device: its next admit loads back 32
    tokens and their state."""
    cache = real_cache(host=HostTier(num_pages=16, num_state_slots=8, policy=policy))
    keys = Keys(cache)
    assert run_request(cache, keys, PROMPT, new=1, chunk=40) == 0
    cache.tier.evict_device(full_tokens=2 * PAGE)
    match = cache.tree.match_prefix(PROMPT[:32])
    assert (match.device_hit_length, match.host_hit_length) == (0, 32)
    return cache, keys


def _fail_copy(cache, direction: Direction, error: BaseException, *, step: int = 1,
               transfer: int = 0) -> list[int]:
    """Raise `error` once, when the `transfer`-th transfer of `direction` from now reaches
    copy step `step` (0: before the first byte; 1: after the first run). Returns the steps
    seen, to show the fault fired."""
    queue, seen, fired = cache.tier.ctrl.queue, [], []

    def hook(t):
        if t.direction is not direction or fired:
            return
        if t.transfer_id not in seen:
            seen.append(t.transfer_id)
        if len(seen) - 1 == transfer and t.steps_done == step:
            fired.append(t.steps_done)
            raise error

    queue.fault = hook
    return fired


def _fail_call(monkeypatch, obj, name: str, error: BaseException, *, call: int) -> list[int]:
    """`obj.name` raises `error` on its `call`-th call (1-based) from now, and works otherwise."""
    real, calls = getattr(obj, name), []

    def wrapper(*args, **kwargs):
        calls.append(1)
        if len(calls) == call:
            raise error
        return real(*args, **kwargs)

    monkeypatch.setattr(obj, name, wrapper)
    return calls


def _assert_nothing_held(cache, *, running: int = 0) -> None:
    cache.check_integrity()
    assert len(cache.running) == running
    if running == 0:
        assert not cache.tree.receipts  # no admission, request or transfer lock left
        assert (cache.held_slots_total, cache.reserved_pages, cache.own_pages) == (0, 0, 0)
        assert cache.rows.num_free_rows == 3
    ctrl = cache.tier.ctrl
    assert not ctrl.transfers.flights and ctrl.queue.num_pending == 0


# ---- loadback ---------------------------------------------------------------------------------

@pytest.mark.parametrize("error", ERRORS, ids=IDS)
def test_a_fault_in_a_loadback_copy_admits_nothing_and_leaks_nothing(error):
    cache, keys = _host_hit_cache()
    free_slots, free_pages = cache.states.num_free, cache.rows.num_free_pages
    fired = _fail_copy(cache, Direction.LOADBACK, error)  # after the KV run, before the state
    with pytest.raises(type(error)):
        cache.admit(PROMPT, prompt_tokens=33, final_tokens=34)
    assert fired == [1]
    _assert_nothing_held(cache)
    assert (cache.states.num_free, cache.rows.num_free_pages) == (free_slots, free_pages)
    # The host copy was not at fault: kept, and the next admission loads it back.
    assert run_request(cache, keys, PROMPT, new=2) == 32
    assert cache.stats.loadback_tokens == 32 and cache.stats.loadback_failures == 0


@pytest.mark.parametrize("error", ERRORS, ids=IDS)
@pytest.mark.parametrize("call", [1, 2], ids=["KV", "state"])
def test_a_fault_in_a_loadback_commit_admits_nothing_and_leaks_nothing(monkeypatch, error, call):
    """The copy landed; recording it in the tree fails at the KV (call 1) or at the state
    (call 2, the KV already recorded: it stays cached on device)."""
    cache, keys = _host_hit_cache()
    calls = _fail_call(monkeypatch, cache.tree, "restore_device_value", error, call=call)
    with pytest.raises(type(error)):
        cache.admit(PROMPT, prompt_tokens=33, final_tokens=34)
    assert len(calls) == call
    _assert_nothing_held(cache)
    node = cache.tree.match_prefix(PROMPT[:32]).best_match_node
    assert (node.full.value is None) == (call == 1) and node.mamba.value is None
    monkeypatch.undo()
    assert run_request(cache, keys, PROMPT, new=2) == 32  # loads back what is missing


@pytest.mark.parametrize("error", ERRORS, ids=IDS)
def test_a_fault_in_the_state_copy_after_a_hit_releases_the_request_lock(monkeypatch, error):
    cache, keys = _host_hit_cache()
    assert run_request(cache, keys, PROMPT, new=2) == 32  # back on device
    _fail_call(monkeypatch, cache.rows, "copy_state", error, call=1)
    with pytest.raises(type(error)):
        cache.admit(PROMPT, prompt_tokens=33, final_tokens=34)
    _assert_nothing_held(cache)
    monkeypatch.undo()
    assert run_request(cache, keys, PROMPT, new=2) == 32


# ---- backups the facade starts ----------------------------------------------------------------

@pytest.mark.parametrize("error", ERRORS, ids=IDS)
@pytest.mark.parametrize("where", ["copy", "commit"])
def test_a_fault_in_the_backup_a_release_starts_still_releases(monkeypatch, error, where):
    """write_through backs the finished request's prefix up inside `release`. A fault in that
    backup's copy, or in recording it (the KV recorded, the state not: the zombie of issue
    21, whose pages the tree and the request both claimed), still releases the request."""
    cache = real_cache(host=HostTier(num_pages=16, num_state_slots=8))
    keys = Keys(cache)
    seq = cache.admit(PROMPT, prompt_tokens=33, final_tokens=34)
    cache.extend(seq, 33)
    cache.commit(seq, PROMPT, 33, cache_unfinished=False)
    if where == "copy":
        fired = _fail_copy(cache, Direction.BACKUP, error, step=0)
    else:
        fired = _fail_call(monkeypatch, cache.tree, "set_host_value", error, call=2)
    with pytest.raises(type(error)):
        cache.release(seq, np.r_[PROMPT, 99])
    assert fired
    _assert_nothing_held(cache)
    node = cache.tree.match_prefix(PROMPT[:32]).best_match_node
    assert len(node.full.value) == 32  # cached on device all the same
    assert node.mamba.host_value is None  # the state's backup did not happen
    assert (node.full.host_value is None) == (where == "copy")
    monkeypatch.undo()
    cache.tier.ctrl.queue.fault = None
    assert run_request(cache, keys, PROMPT, new=2) == 32
    assert run_request(cache, keys, np.arange(20), new=2) == 0  # and new prompts too


@pytest.mark.parametrize("error", ERRORS, ids=IDS)
def test_a_fault_in_the_backup_a_chunk_commit_starts_leaves_the_request_running(error):
    """A prefill chunk caches its prefix (16 tokens and the tracked state) and write_through
    backs it up; when that backup raises, the request stays running, consistent, with the
    prefix cached: the caller may go on or release it."""
    cache = real_cache(host=HostTier(num_pages=16, num_state_slots=8))
    tokens = np.arange(40) + 500
    seq = cache.admit(tokens, prompt_tokens=40, final_tokens=41)
    cache.extend(seq, 16)
    _fail_copy(cache, Direction.BACKUP, error)
    with pytest.raises(type(error)):
        cache.commit(seq, tokens, 16, cache_unfinished=True)
    _assert_nothing_held(cache, running=1)
    assert seq.cached_tokens == 16 and seq.receipt.node.full.host_value is None
    for n in (16, 8):  # the rest of the prompt, then the request finishes
        cache.extend(seq, n)
        cache.commit(seq, tokens, n, cache_unfinished=n == 16)
        cache.check_integrity()
    cache.release(seq, np.r_[tokens, 99])
    _assert_nothing_held(cache)
    assert run_request(cache, Keys(cache), tokens, new=2) == 32


@pytest.mark.parametrize("error", ERRORS, ids=IDS)
def test_a_fault_in_the_backup_a_hit_starts_admits_nothing(error):
    """write_through_selective backs a prefix up on its second hit, inside `admit` after the
    request locked its hit."""
    cache = real_cache(host=HostTier(num_pages=16, num_state_slots=8,
                                     policy=BackupPolicy.WRITE_THROUGH_SELECTIVE))
    keys = Keys(cache)
    run_request(cache, keys, PROMPT, new=1, chunk=40)
    fired = _fail_copy(cache, Direction.BACKUP, error, step=0)
    with pytest.raises(type(error)):
        cache.admit(PROMPT, prompt_tokens=33, final_tokens=34)
    assert fired == [0]
    _assert_nothing_held(cache)
    assert run_request(cache, keys, PROMPT, new=2) == 32  # the third hit backs it up
    assert cache.tree.match_prefix(PROMPT[:32]).best_match_node.full.host_value is not None


def _write_back_cache(keys_out: list, *, num_state_slots: int, prompts: int):
    """write_back over `prompts` cached 16-token pages, each with its state (on device only)."""
    cache = real_cache(num_pages=12, num_state_slots=num_state_slots,
                       host=HostTier(num_pages=16, num_state_slots=8, policy=BackupPolicy.WRITE_BACK))
    keys = Keys(cache)
    for i in range(prompts):
        run_request(cache, keys, np.arange(17) + 100 * i, new=1, chunk=32)
    assert cache.tier.device_evictions().states == 0
    keys_out.append(keys)
    return cache


@pytest.mark.parametrize("error", ERRORS, ids=IDS)
def test_a_fault_in_a_write_back_eviction_for_admission_room_admits_nothing(error):
    """Admission needs a state slot evicted; write_back backs the victim up first, and that
    backup raises after the row was taken."""
    got = []
    cache = _write_back_cache(got, num_state_slots=6, prompts=4)
    assert cache.states.num_free == 2  # three held slots wanted
    fired = _fail_copy(cache, Direction.BACKUP, error, step=0)
    with pytest.raises(type(error)):
        cache.admit(PROMPT, prompt_tokens=33, final_tokens=34)
    assert fired == [0]
    _assert_nothing_held(cache)
    assert cache.states.num_free == 2 and cache.tier.device_evictions().states == 0
    assert run_request(cache, got[0], PROMPT, new=1, chunk=40) == 0
    assert cache.tier.device_evictions().states == 1  # backed up and evicted this time
    _assert_nothing_held(cache)


@pytest.mark.parametrize("error", ERRORS, ids=IDS)
def test_a_fault_in_a_write_back_eviction_for_a_chunk_frees_the_victims_evicted(error):
    """A 120-token chunk needs 8 pages with 6 free: two leaf victims. The first is backed up
    and evicted, the second's backup raises. The first victim's page and state slot — out
    of the tree already — must be back in the allocators; the request keeps running."""
    got = []
    cache = _write_back_cache(got, num_state_slots=12, prompts=6)
    tokens = np.arange(120) + 5000
    seq = cache.admit(tokens, prompt_tokens=120, final_tokens=121)
    assert cache.rows.num_free_pages == 6
    fired = _fail_copy(cache, Direction.BACKUP, error, step=0, transfer=1)
    with pytest.raises(type(error)):
        cache.extend(seq, 120)
    assert fired == [0]
    _assert_nothing_held(cache, running=1)
    assert cache.rows.num_free_pages == 7  # the first victim's page, freed on the way out
    assert cache.tier.device_evictions() == (PAGE, 1)
    cache.extend(seq, 120)  # the same chunk again: one more victim
    cache.commit(seq, tokens, 120, cache_unfinished=True)
    cache.check_integrity()
    cache.extend(seq, 1)
    cache.commit(seq, tokens, 1, cache_unfinished=False)
    cache.release(seq, np.r_[tokens, 99])
    _assert_nothing_held(cache)
