"""The sequential replay loop on small hand-made traces: exact hits, counters and pool
conservation (every page and state slot is in the tree or free after each replay)."""

from __future__ import annotations

import numpy as np
import pytest

from kvledger.sequential.keys import PromptKeyer
from kvledger.sequential.replay import ReplayError, replay
from kvledger.sequential.spec import Checkpoints, Components, MatchKey, ReplaySpec
from kvledger.sim.workload import Request


def _req(rid: int, *blocks: int, last: int = 512) -> Request:
    lengths = (512,) * (len(blocks) - 1) + (last,)
    return Request(rid=rid, arrival_ms=0.0, segment_ids=blocks, segment_tokens=lengths,
                   output_tokens=7)


def _spec(**kw) -> ReplaySpec:
    base = {"page_tokens": 64, "pool_tokens": 1 << 20, "state_slots": 16}
    return ReplaySpec(**(base | kw))


def test_a_state_at_the_prompt_end_is_what_a_repeat_reuses():
    reqs = [_req(0, 1, 2), _req(1, 1, 2), _req(2, 1, 3)]
    out = replay(reqs, _spec(checkpoints=Checkpoints.END), check_every=1)
    # Request 2 shares block 1 only: 512 KV tokens match but no state ends there.
    assert out.hits.tolist() == [0, 1024, 0] and out.kv_hits.tolist() == [0, 1024, 512]
    assert out.counters.state_already_present == 1  # request 1 ends where request 0's state is
    assert (out.final_cached_tokens, out.final_cached_states) == (1536, 2)


def test_branching_checkpoint_saves_a_state_at_the_shared_prefix():
    reqs = [_req(0, 1, 2), _req(1, 1, 3), _req(2, 1, 4)]
    out = replay(reqs, _spec(checkpoints=Checkpoints.BRANCH), check_every=1)
    assert out.hits.tolist() == [0, 0, 512]
    assert out.counters.branching_checkpoints == 1 and out.final_cached_states == 4


def test_partial_last_page_is_freed_and_a_sub_page_prompt_caches_nothing():
    out = replay([_req(0, 5, last=100), _req(1, 5, last=40), _req(2, 5, last=100)], _spec())
    assert out.hits.tolist() == [0, 0, 64]  # 100 tokens: one full page cached, 36 freed
    assert out.final_cached_tokens == 64 and out.final_cached_states == 1


def test_prompt_minus_one_matches_all_but_the_last_token():
    reqs = [_req(0, 1, 2), _req(1, 1, 2)]
    whole = replay(reqs, _spec(checkpoints=Checkpoints.END))
    minus = replay(reqs, _spec(checkpoints=Checkpoints.END, match_key=MatchKey.PROMPT_MINUS_ONE))
    # 1,024 tokens minus one: 15 whole pages, beyond the only state (at page 16)
    assert whole.hits.tolist() == [0, 1024] and minus.hits.tolist() == [0, 0]
    assert minus.kv_hits.tolist() == [0, 960]


def test_full_only_hits_every_cached_page_and_evicts_lru_leaves():
    reqs = [_req(0, 1, 2), _req(1, 3, 4), _req(2, 1, 2)]
    out = replay(reqs, _spec(components=Components.FULL, state_slots=None, pool_tokens=1536),
                 check_every=1)
    # 24 pages: request 1 evicts request 0's 16-page leaf, request 2 then evicts request 1's.
    assert out.hits.tolist() == [0, 0, 0]
    assert out.counters.evict_calls == 2 and out.counters.evicted_tokens == 2048
    warm = replay(reqs, _spec(components=Components.FULL, state_slots=None))
    assert warm.hits.tolist() == [0, 0, 1024]


def test_state_pressure_evicts_the_oldest_state_and_its_leaf():
    reqs = [_req(0, 1), _req(1, 2), _req(2, 1), _req(3, 2)]
    out = replay(reqs, _spec(checkpoints=Checkpoints.END, state_slots=1), check_every=1)
    assert out.hits.tolist() == [0, 0, 0, 0]
    assert (out.counters.evict_calls, out.counters.evicted_states) == (3, 3)
    assert out.counters.evicted_tokens == 3 * 512  # each state's leaf went with it


@pytest.mark.parametrize("page", [1, 64])
def test_shared_prefixes_under_pressure_conserve_every_index(page):
    """300 seeded requests (one of 6 shared prefixes of 1-8 blocks, then 1-4 blocks of their
    own, a partial last block) into small pools, checking after every few requests that
    tree and allocators agree on every page and state slot."""
    rng = np.random.default_rng(7)
    prefixes = [list(range(100 * p, 100 * p + rng.integers(1, 9))) for p in range(6)]
    reqs = []
    for rid in range(300):
        own = list(range(10_000 + 10 * rid, 10_000 + 10 * rid + rng.integers(1, 5)))
        blocks = prefixes[rng.integers(6)] + own
        reqs.append(_req(rid, *blocks, last=int(rng.integers(1, 513))))
    spec = _spec(page_tokens=page, pool_tokens=20_000, state_slots=6,
                 checkpoints=Checkpoints.BRANCH)
    out = replay(reqs, spec, check_every=5)
    c = out.counters
    assert c.evict_calls > 100 and c.branching_checkpoints > 0
    assert 0 < out.hits.sum() <= out.kv_hits.sum()
    assert out.final_cached_states <= 6 and out.final_cached_tokens <= 20_000


def test_a_prompt_larger_than_the_pool_is_a_clear_error():
    with pytest.raises(ReplayError, match="request 0: needs 1,024 more KV tokens"):
        replay([_req(0, 1, 2)], _spec(pool_tokens=512))


@pytest.mark.parametrize("page", [1, 16, 64, 100])
def test_keys_are_equal_exactly_when_the_pages_tokens_are(page):
    keyer = PromptKeyer(page)
    a, b = keyer.keys(_req(0, 1, 2, last=300)), keyer.keys(_req(1, 1, 3, last=300))
    assert len(a) == 812 // page
    shared = 512 // page  # whole pages inside block 1 (a page across the boundary differs)
    assert np.array_equal(a[:shared], b[:shared]) and not (a[shared:] == b[shared:]).any()
    assert len(set(a.tolist())) == len(a)


@pytest.mark.parametrize(("kw", "message"), [
    ({"page_tokens": 0}, "--page-size 0"),
    ({"pool_tokens": True}, "--pool-tokens True"),
    ({"state_slots": 0}, "--state-slots 0"),
    ({"rules": "sglang-9"}, "--rules 'sglang-9'"),
])
def test_spec_errors_name_the_flag(kw, message):
    with pytest.raises(ValueError, match=message):
        _spec(**kw)
