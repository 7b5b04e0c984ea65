"""The store tier in accounting mode: capacity, objects, bytes, LRU eviction, transfer time."""

from __future__ import annotations

import pytest

from kvledger.cache.store_accounting import StoreAccounting, StoreLink, prefix_chain
from kvledger.store.backend import BackendKind

LINK = StoreLink(backend=BackendKind.REDIS, get_gbps=1.0, put_gbps=2.0, latency_ms=0.5)
# manifest of n pages: 26 + 16·(n + 1) + 8 bytes (kvledger.store.group, version 2)
MF1, MF2 = 26 + 32 + 8, 26 + 48 + 8


def store(capacity: int = 100_000, link: StoreLink = LINK) -> StoreAccounting:
    return StoreAccounting(capacity_bytes=capacity, page_bytes=1_000, state_bytes=2_000, link=link)


def test_groups_along_one_prefix_share_their_pages():
    s, chain = store(), prefix_chain([1, 2, 3, 4])
    assert s.put(chain, end_pages=2)
    assert s.put(chain, end_pages=4)  # pages 2, 3 and a state: the parent's pages are reused
    assert s.objects == 4 + 2 * 2
    assert s.used_bytes == 4 * 1_000 + 2 * 2_000 + 2 * MF2
    assert s.put(chain, end_pages=1)  # page 0 again: no new page object
    assert s.objects == 4 + 3 * 2 and s.used_bytes == 4 * 1_000 + 3 * 2_000 + 2 * MF2 + MF1
    s.check_integrity()


def test_a_different_prefix_is_a_different_object():
    s = store()
    s.put(prefix_chain([1, 2]), end_pages=2)
    assert s.match(prefix_chain([9, 2]), start_pages=0, max_pages=2) == 0
    assert s.match(prefix_chain([1, 2, 5]), start_pages=0, max_pages=3) == 2


def test_lru_eviction_makes_room_and_a_child_without_its_parent_is_a_miss():
    # room for exactly two one-page groups
    s, a, b = store(capacity=2 * (1_000 + 2_000 + MF1)), prefix_chain([1, 2]), prefix_chain([7])
    assert s.put(a, end_pages=1) and s.put(b, end_pages=1)
    s.match(a, start_pages=0, max_pages=1)  # a lookup does not refresh; a read does
    s.record_get(a, 0, 1)  # a is now the most recent: b goes first
    assert s.put(a, end_pages=2)  # needs 1,000 + 2,000 + MF1: evicts b
    assert s.evicted_groups == 1 and s.match(b, start_pages=0, max_pages=1) == 0
    assert s.match(a, start_pages=0, max_pages=2) == 2
    s.check_integrity()
    assert s.put(b, end_pages=1)  # evicts a's root group (least recent): a[:2] unreachable
    assert s.match(a, start_pages=0, max_pages=2) == 0
    s.check_integrity()


def test_a_group_larger_than_the_store_is_refused():
    s = store(capacity=2_500)
    assert not s.put(prefix_chain([1]), end_pages=1)
    assert s.refused_groups == 1 and s.used_bytes == 0 and s.objects == 0


def test_transfer_time_is_latency_plus_bytes_over_bandwidth():
    s, chain = store(), prefix_chain([1, 2, 3])
    s.put(chain, end_pages=1)
    s.put(chain, end_pages=3)
    assert s.put_ms == pytest.approx((0.5 + (1_000 + 2_000 + MF1) / 2e6)
                                     + (0.5 + (2_000 + 2_000 + MF2) / 2e6))
    # restore pages 1..2 onto a 1-page hit: one manifest (MF2), 2 pages and the state
    assert s.record_get(chain, 1, 3) == pytest.approx(2 * 0.5 + (2_000 + 2_000 + MF2) / 1e6)
    assert s.get_bytes == 2_000 + 2_000 + MF2 and s.get_groups == 1


def test_local_dir_rounds_each_file_to_4_kib():
    link = StoreLink.default(BackendKind.LOCAL_DIR)
    s = store(link=link)
    s.put(prefix_chain([1]), end_pages=1)
    assert s.used_bytes == 4096 + 4096 + 4096  # page, state, manifest: one block each


@pytest.mark.parametrize("kwargs, match", [
    ({"capacity_bytes": 0}, "--l3-size"),
    ({"link": StoreLink(backend=BackendKind.MOONCAKE, get_gbps=0, put_gbps=1, latency_ms=0)},
     "--l3-backend mooncake"),
])
def test_bad_settings_name_the_flag(kwargs, match):
    args = {"capacity_bytes": 1 << 20, "page_bytes": 1, "state_bytes": 1, "link": LINK} | kwargs
    with pytest.raises(ValueError, match=match):
        StoreAccounting(**args)
