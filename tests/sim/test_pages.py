"""Page keys: equal tokens ⇔ equal keys, for trace pages and generator segments."""

from __future__ import annotations

import numpy as np
import pytest

from kvledger.sim.pages import PageKeyer
from kvledger.sim.workload import SEGMENT_SHIFT, Request, WorkloadError, sequence_token_ids
from sim.sim_factories import request


def test_trace_pages_at_page_64_give_eight_keys_per_hash_id():
    keyer = PageKeyer(64)
    a = request(0, 0, [(7, 512), (8, 512), (9, 100)], output=0)
    keys = keyer.keys(a)
    assert len(keys) == 8 + 8 + 1  # 100 tokens of hash id 9 → one full page, 36 left over
    assert keys[:8].tolist() == [(7 << SEGMENT_SHIFT) + 64 * i for i in range(8)]
    assert keyer.num_interned == 0  # 512 is a multiple of 64: no page straddles hash ids


def test_equal_hash_ids_share_keys_and_different_ones_do_not():
    keyer = PageKeyer(64)
    a = keyer.keys(request(0, 0, [(1, 512), (2, 512)], output=0))
    b = keyer.keys(request(1, 0, [(1, 512), (3, 512)], output=0))
    assert np.array_equal(a[:8], b[:8])
    assert not set(a[8:].tolist()) & set(b[8:].tolist())


def test_straddling_pages_are_interned_by_content():
    keyer = PageKeyer(256)  # 0.5.23 DSA page: hash-id pages of 512 still align
    a = keyer.keys(request(0, 0, [(1, 300), (2, 300)], output=0))
    b = keyer.keys(request(1, 0, [(1, 300), (2, 300), (3, 300)], output=0))
    c = keyer.keys(request(2, 0, [(1, 300), (4, 300)], output=0))
    assert len(a) == 2 and a[1] < 0  # page 2 holds tokens 256..511: both segments
    assert np.array_equal(a, b[:2])
    assert a[0] == c[0] and a[1] != c[1]
    assert keyer.num_interned == 3  # (1, 2), then (2, 3) in b, then (1, 4) in c


def test_output_tokens_extend_the_sequence_and_feed_the_next_turn():
    keyer = PageKeyer(64)
    turn1 = request(0, 0, [(1, 100)], output=60, output_segment=50)
    turn2 = request(1, 0, [(1, 100), (50, 60), (2, 10)], output=5)
    k1, k2 = keyer.keys(turn1), keyer.keys(turn2)
    assert len(k1) == 160 // 64
    assert np.array_equal(k1, k2[: len(k1)])  # the answer is cached where turn 2 reads it
    unnamed = request(2, 0, [(1, 100)], output=60)
    assert keyer.keys(unnamed)[1] != k1[1]  # an unnamed output shares nothing


def test_page_of_one_token_keys_every_token():
    keyer = PageKeyer(1)
    r = request(0, 0, [(3, 5)], output=2)
    assert np.array_equal(keyer.keys(r), sequence_token_ids(r))


def test_bad_inputs():
    with pytest.raises(ValueError, match="page_tokens 0"):
        PageKeyer(0)
    with pytest.raises(WorkloadError, match="segment lengths"):
        Request(rid=0, arrival_ms=0.0, segment_ids=(1,), segment_tokens=(1 << 19,), output_tokens=1)
    with pytest.raises(WorkloadError, match="2 segment ids but 1"):
        Request(rid=0, arrival_ms=0.0, segment_ids=(1, 2), segment_tokens=(5,), output_tokens=1)
