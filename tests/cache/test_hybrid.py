"""HybridCache, in real bytes and in accounting: admission, checkpoints, waiting, misuse.

Every test runs the same scenario through both modes (`MODES`) and expects the same numbers:
the modes differ only in how request memory is held, never in a decision.
"""

from __future__ import annotations

import numpy as np
import pytest

from cache.cache_factories import HELD, PAGE, Keys, accounting_cache, real_cache, run_request
from kvledger.cache import CheckpointMode, HybridCache, Shortfall
from kvledger.cache.hicache_tier import HiCacheTier
from kvledger.cache.token_rows import TokenRows
from kvledger.engine.config import TinyConfig
from kvledger.engine.memory import HostTier, PoolSizes, build_device_pools, build_host_tier
from kvledger.host.policy import BackupPolicy
from kvledger.pools.errors import IntegrityError
from kvledger.tree import RadixTree

MODES = {"real bytes": real_cache, "accounting": accounting_cache}


@pytest.fixture(params=sorted(MODES))
def make(request):
    return MODES[request.param]


def test_a_finished_prompt_is_served_to_the_next_request(make):
    cache = make()
    keys = Keys(cache)
    prompt = np.arange(50)
    assert run_request(cache, keys, prompt, new=3, chunk=64) == 0
    # One 50-token chunk: the prefill forward tracks the deepest grid point (48) and, as the
    # request goes on running, caches it (cache_unfinished_req). The next request matches
    # prompt[:-1] (49 tokens) page by page: 48.
    assert run_request(cache, keys, prompt, new=3) == 48
    assert run_request(cache, keys, np.r_[prompt[:20], [7] * 30], new=2) == 0  # no state at 16
    assert cache.stats.prefix_hit_tokens == 48
    # The third request was told to save a state at its 16-token branching point.
    assert cache.stats.branch_states == 1
    assert run_request(cache, keys, np.r_[prompt[:20], [8] * 30], new=2) == 16


def test_one_checkpoint_per_forward_branch_first(make):
    cache = make()
    keys = Keys(cache)
    run_request(cache, keys, np.arange(50), new=2, chunk=64)  # one state, at 48
    prompt = np.r_[np.arange(40), [5] * 30]  # shares 2 pages, no state there: branch at 32
    seq = cache.admit(keys(prompt), prompt_tokens=70, final_tokens=70)
    assert (seq.usable_hit_tokens, seq.hit_tokens, seq.branch_tokens) == (0, 32, 32)
    ext = cache.extend(seq, 64)  # spans 32 (the branch) and 48: the branch wins
    assert ext.checkpoints == ((32, seq.slots[1]),)
    cache.commit(seq, keys(prompt), 64, cache_unfinished=True)
    ext = cache.extend(seq, 6)  # 6 < one grid of 16 tokens: nothing tracked
    assert ext.checkpoints == ()
    # Ping-pong: the next checkpoint goes to the other track slot.
    assert seq.next_track == 2
    cache.commit(seq, keys(prompt), 6, cache_unfinished=False)
    cache.release(seq, keys(prompt))
    cache.check_integrity()


def test_admission_is_check_then_commit(make):
    cache = make(num_pages=6)  # 96 tokens
    keys = Keys(cache)
    first = cache.admit(keys(np.arange(70)), prompt_tokens=60, final_tokens=70)  # 5 pages
    assert cache.reserved_pages == 5
    pools = (cache.rows.num_free_pages, cache.reserved_pages, cache.rows.num_free_rows,
             cache.states.num_free)
    got = cache.admit(keys(np.arange(100, 130)), prompt_tokens=20, final_tokens=30)
    assert got == Shortfall(rows=False, pages=True, slots=False)  # 2 pages needed, 1 left
    assert (cache.rows.num_free_pages, cache.reserved_pages, cache.rows.num_free_rows,
            cache.states.num_free) == pools
    cache.release(first, keys(np.arange(70)))
    assert not isinstance(cache.admit(keys(np.arange(100, 130)), prompt_tokens=20,
                                      final_tokens=30), Shortfall)
    cache.check_integrity()


@pytest.mark.parametrize("num_state_slots", [9, 10, 11])
def test_a_third_branching_request_waits_for_state_slots(make, num_state_slots):
    """Regression (issue 13): with 9–11 state slots a third request that branches from a
    cached prefix raised `no state slot after eviction`. Two running requests hold 3 slots
    each and pin the state the tree took from each after its prefill forward (8 slots); the
    third waits — a `Shortfall` naming the state slots, nothing changed — until one finishes."""
    cache = make(num_state_slots=num_state_slots)
    keys = Keys(cache)
    a, b = np.arange(40), np.arange(40) + 100
    running = []
    for prompt in (a, b):
        seq = cache.admit(keys(prompt), prompt_tokens=40, final_tokens=60)
        cache.extend(seq, 40)
        cache.commit(seq, keys(prompt), 40, cache_unfinished=True)
        running.append(seq)
    assert cache.states.num_free == num_state_slots - 2 * HELD - 2
    third = np.r_[a[:36], [9] * 20]  # branches inside a's cached 32 tokens... at 32
    got = cache.admit(keys(third), prompt_tokens=56, final_tokens=60)
    if num_state_slots - 8 < HELD:
        assert got == Shortfall(rows=False, pages=False, slots=True)
        cache.check_integrity()
        cache.release(running.pop(0), keys(a))
        got = cache.admit(keys(third), prompt_tokens=56, final_tokens=60)
    assert not isinstance(got, Shortfall)
    cache.check_integrity()


def test_request_rows_bound_the_running_requests(make):
    cache = make(num_rows=1)
    keys = Keys(cache)
    cache.admit(keys(np.arange(20)), prompt_tokens=20, final_tokens=25)
    assert cache.admit(keys(np.arange(30, 50)), prompt_tokens=20,
                       final_tokens=25) == Shortfall(rows=True, pages=False, slots=False)


def test_never_fits_names_the_ledger(make):
    cache = make(num_pages=4, num_state_slots=2)
    assert cache.never_fits(65) == "needs 5 token pages, the pool has 4"
    assert cache.never_fits(64) == "needs 3 state slots, the pool has 2"


def test_misuse_is_named():
    cache = real_cache()
    keys = Keys(cache)
    with pytest.raises(ValueError, match="exceed the request row width 128"):
        cache.admit(np.arange(10), prompt_tokens=10, final_tokens=200)
    with pytest.raises(ValueError, match="need 1 ≤ prompt"):
        cache.admit(np.arange(0), prompt_tokens=0, final_tokens=5)
    seq = cache.admit(keys(np.arange(10)), prompt_tokens=10, final_tokens=12)
    cache.extend(seq, 4)
    with pytest.raises(RuntimeError, match="before the last chunk was committed"):
        cache.extend(seq, 4)
    with pytest.raises(RuntimeError, match="decode strides are for accounting mode"):
        cache.decode(seq, 2)
    with pytest.raises(ValueError, match="held_slots_per_request 1: mode extra_buffer holds 2"):
        HybridCache(rows=cache.rows, tree=cache.tree, states=cache.states,
                    held_slots_per_request=1, mode=CheckpointMode.TRACKED)


def test_a_host_tier_must_share_the_allocators():
    pools = build_device_pools(TinyConfig(), PoolSizes(num_pages=4))
    tree = RadixTree(page_size=PAGE, mamba_chunk_tokens=PAGE)
    other = build_device_pools(TinyConfig(), PoolSizes(num_pages=4))
    with pytest.raises(ValueError, match="share this tree and allocators"):
        HybridCache(rows=TokenRows(pools.kv, pools.token_allocator), tree=tree,
                    states=pools.state_allocator, held_slots_per_request=HELD,
                    mode=CheckpointMode.TRACKED,
                    host=HiCacheTier(build_host_tier(other, tree, HostTier()), unit_tokens=1))


def test_admit_pins_the_host_copy_it_will_load_back():
    """write_back backs a state up to make room for the request's slots; with the host state
    pool full, that backup may evict host LRU entries — never the match admit loads back."""
    cache = real_cache(num_pages=8, num_state_slots=6,
                       host=HostTier(num_pages=2, num_state_slots=1, policy=BackupPolicy.WRITE_BACK))
    keys = Keys(cache)
    prompt = np.arange(17) + 1000
    run_request(cache, keys, prompt, new=1, chunk=32)  # one node: tokens 0..15 and its state
    cache.tier.evict_device(full_tokens=PAGE)  # backed up, then host-only: 1 page, 1 state
    host = cache.tier.ctrl.host
    for i in range(4):  # 16 + 1 tokens each: one page and its state cached at release
        run_request(cache, keys, np.arange(17) + 100 * i, new=1, chunk=32)
    # 4 device states in the tree, 2 free: admit's third slot evicts one, and backing that
    # up needs the single host state slot, which holds the match's state.
    assert cache.states.num_free == 2 and host.sizes().state_free_slots == 0
    seq = cache.admit(prompt, prompt_tokens=17, final_tokens=18)
    assert seq.usable_hit_tokens == PAGE
    assert (cache.stats.loadback_tokens, cache.stats.loadback_states) == (PAGE, 1)
    cache.check_integrity()


@pytest.mark.parametrize("host", [None, HostTier(num_pages=8, num_state_slots=4)],
                         ids=["device only", "host tier"])
def test_every_device_lock_is_owned_by_a_running_request(host):
    """The facade hands its running requests' receipts to the tier's check (the host
    controller's `check_integrity(request_receipts=…)` when there is a host tier), so a lock
    nobody owns, or a request's receipt unlocked behind its back, fails the check."""
    cache = real_cache(host=host)
    keys = Keys(cache)
    prompt = np.arange(40)
    run_request(cache, keys, prompt, new=2)
    seq = cache.admit(keys(prompt), prompt_tokens=40, final_tokens=41)
    assert seq.receipt is not None and seq.usable_hit_tokens == 32
    cache.check_integrity()  # the request's lock is its own
    stray = cache.tree.lock(seq.receipt.node)  # a lock no request or transfer owns
    with pytest.raises(IntegrityError if host else RuntimeError, match="owner"):
        cache.check_integrity()
    cache.tree.unlock(stray)
    cache.tree.unlock(seq.receipt)  # the request still claims it
    with pytest.raises(IntegrityError if host else RuntimeError,
                       match="no longer outstanding|receipts"):
        cache.check_integrity()
