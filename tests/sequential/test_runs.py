"""Run keys: each prompt's runs cover its full pages exactly, no run spans a point where two
prompts of the trace part, and a replay over runs equals the replay over single pages
(hits, KV hits, counters and what stays cached) on random traces, every release's rules."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvledger.sequential.keys import PromptKeyer
from kvledger.sequential.replay import replay
from kvledger.sequential.runs import RunKeyer
from kvledger.sequential.spec import Checkpoints, Components, MatchKey, ReplaySpec
from kvledger.sglang.rules import RULES
from kvledger.sim.workload import Request


def _req(rid: int, blocks: list[int], last: int) -> Request:
    lengths = (512,) * (len(blocks) - 1) + (last,)
    return Request(rid=rid, arrival_ms=0.0, segment_ids=tuple(blocks), segment_tokens=lengths,
                   output_tokens=3)


@st.composite
def traces(draw, max_requests: int = 40):
    """Prompts over a small block alphabet so that prefixes and partial blocks repeat."""
    count = draw(st.integers(1, max_requests))
    out = []
    for rid in range(count):
        blocks = draw(st.lists(st.integers(0, 9), min_size=1, max_size=6))
        last = draw(st.sampled_from([1, 63, 64, 65, 128, 300, 511, 512]))
        out.append(_req(rid, blocks, last))
    return out


@pytest.mark.parametrize("page", [1, 16, 64, 512])
@given(requests=traces(), minus_one=st.booleans())
@settings(max_examples=40, deadline=None)
def test_runs_cover_the_full_pages_and_key_their_first_page(page, requests, minus_one):
    keyer, pages = RunKeyer(requests, page, minus_one=minus_one), PromptKeyer(page)
    for request in requests:
        keys, ends, lengths = keyer.runs(request)
        page_keys = pages.keys(request)
        assert (ends[-1] if len(ends) else 0) == len(page_keys) == request.prompt_tokens // page
        starts = [0, *ends][: len(ends)]
        assert keys.tolist() == [int(page_keys[s]) for s in starts]
        assert lengths.tolist() == [e - s for s, e in zip(starts, ends, strict=True)]
        assert (lengths >= 1).all() and (lengths <= keyer.max_run_pages).all()
        # Every other prompt's end (and match end) inside this prompt's pages is a boundary.
        for other in requests:
            for stop in {other.prompt_tokens // page, (other.prompt_tokens - 1) // page}:
                if minus_one or stop == other.prompt_tokens // page:
                    shared = np.array_equal(pages.keys(other)[:stop], page_keys[:stop])
                    if shared and 0 < stop < len(page_keys):
                        assert stop in ends


def test_a_block_is_cut_where_another_prompt_ends_inside_it():
    a, b = _req(0, [7, 9], last=200), _req(1, [7, 9, 4], last=10)
    keys, ends, lengths = RunKeyer([a, b], 64).runs(b)
    assert ends == [8, 11, 16] and lengths.tolist() == [8, 3, 5]
    assert RunKeyer([b], 64).runs(b)[1] == [8, 16]  # alone, block 9 stays whole


@pytest.mark.parametrize("rules", list(RULES))
@pytest.mark.parametrize("page", [1, 64])
@given(requests=traces(), pool_pages=st.integers(8, 60), data=st.data())
@settings(max_examples=30, deadline=None)
def test_a_replay_over_runs_equals_one_over_pages(rules, page, requests, pool_pages, data):
    hybrid = data.draw(st.booleans())
    spec = ReplaySpec(
        page_tokens=page, pool_tokens=max(pool_pages * 512 // 8, page) if page == 1
        else pool_pages * page,
        state_slots=data.draw(st.integers(1, 6)) if hybrid else None,
        components=Components.FULL_MAMBA if hybrid else Components.FULL,
        match_key=data.draw(st.sampled_from(list(MatchKey))), rules=rules)
    try:
        pages = replay(requests, spec, unit_runs=True)
    except ValueError as exc:  # a prompt larger than the pool fails the same way over runs
        with pytest.raises(type(exc), match="the KV pool is too small"):
            replay(requests, spec)
        return
    runs = replay(requests, spec, check_every=1)
    assert runs.hits.tolist() == pages.hits.tolist()
    assert runs.kv_hits.tolist() == pages.kv_hits.tolist()
    assert runs.counters == pages.counters
    assert (runs.final_cached_tokens, runs.final_cached_states) == (
        pages.final_cached_tokens, pages.final_cached_states)


def test_a_branching_replay_keys_single_pages():
    requests = [_req(0, [1, 2], 512), _req(1, [1, 3], 512), _req(2, [1, 4], 512)]
    spec = ReplaySpec(page_tokens=64, pool_tokens=1 << 20, state_slots=8,
                      checkpoints=Checkpoints.BRANCH)
    assert replay(requests, spec).hits.tolist() == [0, 0, 512]
