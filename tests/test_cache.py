"""HybridCache, the facade: admission, reservations, inserts and conservation, without a model.

The cache only sees token ids and slots, so these tests drive it directly: a Hypothesis state
machine admits, extends, commits and releases requests over shared prefixes (device only,
and with a write_back host tier) and checks integrity after every step — tree, pools, host
tier, and that every device page and state slot is owned exactly once (tree or request).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kvledger.cache import STATE_SLOTS_PER_REQUEST, HybridCache
from kvledger.engine.config import TinyConfig
from kvledger.engine.memory import HostTier, PoolSizes, build_device_pools, build_host_tier
from kvledger.host.policy import BackupPolicy
from kvledger.tree import RadixTree

CFG = TinyConfig()
PAGE = 16
PREFIXES = [np.arange(40) % 7, np.arange(40) % 5 + 10, np.arange(40) % 3 + 20]


def make_cache(num_pages: int = 12, num_state_slots: int = 12, host: HostTier | None = None,
               max_running_requests: int = 3) -> HybridCache:
    pools = build_device_pools(CFG, PoolSizes(num_pages=num_pages, page_tokens=PAGE,
                                              num_state_slots=num_state_slots,
                                              max_running_requests=max_running_requests,
                                              max_context_tokens=128))
    tree = RadixTree(page_size=PAGE, mamba_chunk_tokens=PAGE)
    controller = None if host is None else build_host_tier(pools, tree, host)
    return HybridCache(kv=pools.kv, token_allocator=pools.token_allocator,
                       state_allocator=pools.state_allocator, tree=tree, host=controller)


def run_request(cache: HybridCache, prompt: np.ndarray, new: int, chunk: int = 16):
    """Drive one request to the end: prefill in chunks, decode `new` tokens, release."""
    seq = cache.admit(prompt, len(prompt) + new - 1)
    assert seq is not None
    hit = seq.computed_tokens
    tokens = np.concatenate([prompt, np.full(new, 99)])
    while seq.computed_tokens < len(prompt) + new - 1:
        left = len(prompt) - seq.computed_tokens
        n = min(chunk, left) if left > 0 else 1
        cache.extend(seq, n)
        cache.commit(seq, tokens, n, cache_unfinished=left > 0)
        cache.check_integrity()
    cache.release(seq, tokens)
    cache.check_integrity()
    return hit


def test_a_finished_prompt_is_served_page_by_page_to_the_next_request():
    cache = make_cache()
    prompt = np.arange(50)
    assert run_request(cache, prompt, new=3) == 0
    # 52 tokens computed; cached up to the last page end (48). The next request matches
    # prompt[:-1] (49 tokens) page by page: 48.
    assert run_request(cache, prompt, new=3) == 48
    assert run_request(cache, np.r_[prompt[:20], [7] * 30], new=2) == 16  # shares one page
    assert cache.stats.prefix_hit_tokens == 64


def test_admission_is_check_then_commit():
    cache = make_cache(num_pages=6)  # 96 tokens
    first = cache.admit(np.arange(60), 70)  # 5 pages reserved
    assert first is not None and cache.reserved_pages == 5
    before = (cache.tokens.num_free_pages, cache.reserved_pages, cache.req_to_token.rows.num_free)
    assert cache.admit(np.arange(100, 120), 30) is None  # 2 pages needed, 1 left
    assert (cache.tokens.num_free_pages, cache.reserved_pages,
            cache.req_to_token.rows.num_free) == before
    cache.release(first, np.arange(70))
    assert cache.admit(np.arange(100, 120), 30) is not None
    cache.check_integrity()


def test_state_slots_bound_the_running_requests():
    cache = make_cache(num_state_slots=2 * STATE_SLOTS_PER_REQUEST, max_running_requests=3)
    seqs = [cache.admit(np.arange(i, i + 20), 25) for i in range(2)]
    assert all(s is not None for s in seqs)
    assert cache.admit(np.arange(50, 70), 25) is None  # a third could pin a fifth slot each
    cache.check_integrity()


def test_misuse_is_named():
    cache = make_cache()
    with pytest.raises(ValueError, match="exceed the request row width 128"):
        cache.admit(np.arange(10), 200)
    with pytest.raises(ValueError, match="need 1 ≤ prompt"):
        cache.admit(np.arange(0), 5)
    seq = cache.admit(np.arange(10), 12)
    cache.extend(seq, 4)
    with pytest.raises(RuntimeError, match="before the last chunk was committed"):
        cache.extend(seq, 4)


def test_host_tier_must_share_the_allocators():
    pools = build_device_pools(CFG, PoolSizes(num_pages=4))
    tree = RadixTree(page_size=PAGE, mamba_chunk_tokens=PAGE)
    other = build_device_pools(CFG, PoolSizes(num_pages=4))
    with pytest.raises(ValueError, match="share this tree and allocators"):
        HybridCache(kv=pools.kv, token_allocator=pools.token_allocator,
                    state_allocator=pools.state_allocator, tree=tree,
                    host=build_host_tier(other, tree, HostTier()))


def test_admit_pins_the_host_copy_it_will_load_back():
    """write_back backs a state up to make room for the request's slots; with the host state
    pool full, that backup may evict host LRU entries — never the match admit loads back."""
    cache = make_cache(num_pages=8, num_state_slots=5,
                       host=HostTier(num_pages=2, num_state_slots=1, policy=BackupPolicy.WRITE_BACK))
    prompt = np.arange(17) + 1000
    run_request(cache, prompt, new=1)  # one node: tokens 0..15 and the state after 16
    cache.tier.evict_device(full_tokens=PAGE)  # backed up, then host-only: 1 page, 1 state
    for i in range(4):  # 15 + 1 tokens each: inserted at release, 2 slots while running
        run_request(cache, np.arange(15) + 100 * i, new=2)
    # 4 device states in the tree, 1 free: admit's second slot evicts one, and backing that
    # up needs the single host state slot, which holds the match's state.
    assert cache.states.num_free == 1 and cache.tier.host.sizes().state_free_slots == 0
    seq = cache.admit(prompt, 18)
    assert seq is not None and seq.computed_tokens == PAGE
    assert (cache.stats.loadback_tokens, cache.stats.loadback_states) == (PAGE, 1)
    cache.check_integrity()


class CacheMachine(RuleBasedStateMachine):
    host: HostTier | None = None

    def __init__(self) -> None:
        super().__init__()
        self.cache = make_cache(num_pages=6, num_state_slots=12, host=self.host)
        self.live: dict[int, tuple[object, np.ndarray, int]] = {}  # row -> (seq, tokens, end)
        self.cached: list[np.ndarray] = []  # token runs inserted so far (upper bound of hits)

    @rule(prefix=st.integers(0, 2), keep=st.sampled_from([0, 16, 33, 40]), extra=st.integers(1, 20),
          new=st.integers(1, 10), salt=st.integers(0, 3))
    def admit(self, prefix, keep, extra, new, salt):
        prompt = np.r_[PREFIXES[prefix][:keep], (np.arange(extra) * 11 + salt) % 50 + 100]
        before = (self.cache.tokens.num_free_pages, self.cache.reserved_pages,
                  self.cache.states.num_free, len(self.cache.running))
        seq = self.cache.admit(prompt.astype(np.int64), len(prompt) + new - 1)
        if seq is None:
            after = (self.cache.tokens.num_free_pages, self.cache.reserved_pages,
                     self.cache.states.num_free, len(self.cache.running))
            assert after == before, "a refused admission changed the pools"
            return
        hit = seq.computed_tokens
        assert hit % PAGE == 0 and hit < len(prompt)
        assert hit <= max((_common(prompt, run) for run in self.cached), default=0)
        tokens = np.r_[prompt, np.full(new, 7)].astype(np.int64)
        self.live[seq.row] = (seq, tokens, len(prompt))

    @precondition(lambda self: self.live)
    @rule(data=st.data(), chunk=st.integers(1, 24), steps=st.integers(1, 8))
    def step(self, data, chunk, steps):
        """Up to `steps` chunks (prefill) or tokens (decode) of one request."""
        row = data.draw(st.sampled_from(sorted(self.live)))
        seq, tokens, prompt_len = self.live[row]
        for _ in range(steps):
            if seq.computed_tokens >= len(tokens) - 1:
                return
            left = prompt_len - seq.computed_tokens
            n = min(left, chunk) if left > 0 else 1
            ext = self.cache.extend(seq, n)
            assert len(ext.token_locs) == seq.computed_tokens + n
            self.cache.commit(seq, tokens, n, cache_unfinished=left > 0)
            self.cached.append(tokens[: seq.cached_tokens])

    @precondition(lambda self: self.live)
    @rule(data=st.data())
    def release(self, data):
        row = data.draw(st.sampled_from(sorted(self.live)))
        seq, tokens, _ = self.live.pop(row)
        self.cache.release(seq, tokens)
        self.cached.append(tokens[: seq.computed_tokens])

    @invariant()
    def conserved(self):
        self.cache.check_integrity()
        for seq, _, _ in self.live.values():
            row = self.cache.req_to_token.read(seq.row, seq.cached_tokens).numpy()
            assert np.array_equal(row, self.cache.tree.path_device_indices(seq.receipt.node)
                                  if seq.receipt is not None else row[:0])


def _common(a: np.ndarray, b: np.ndarray) -> int:
    n = min(len(a) - 1, len(b))
    differ = np.flatnonzero(a[:n] != b[:n])
    return int(differ[0]) if len(differ) else n


class HostCacheMachine(CacheMachine):
    host = HostTier(num_pages=6, num_state_slots=4, policy=BackupPolicy.WRITE_BACK)


TestCacheMachine = CacheMachine.TestCase
TestCacheMachine.settings = settings(max_examples=25, stateful_step_count=30, deadline=None)
TestHostCacheMachine = HostCacheMachine.TestCase
TestHostCacheMachine.settings = settings(max_examples=25, stateful_step_count=30, deadline=None)
