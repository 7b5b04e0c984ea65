"""The store tier's groups in accounting mode: capacity, objects, bytes, LRU eviction, reads
that answer as `read_prefix` does over a real backend, and transfer time."""

from __future__ import annotations

import numpy as np
import pytest

from kvledger.store.accounting import AccountingStore, prefix_chain
from kvledger.store.backend import BackendKind
from kvledger.store.link import StoreLink
from kvledger.store.queue import StoreTimeout

LINK = StoreLink(backend=BackendKind.REDIS, get_gbps=1.0, put_gbps=2.0, latency_ms=0.5)
# manifest of n pages: 26 + 16·(n + 1) + 8 bytes (kvledger.store.group, version 2)
MF1, MF2 = 26 + 32 + 8, 26 + 48 + 8


def store(capacity: int = 100_000, link: StoreLink = LINK) -> AccountingStore:
    return AccountingStore(capacity_bytes=capacity, page_bytes=1_000, state_bytes=2_000, link=link)


def read(s: AccountingStore, chain, *, start: int = 0, min_end: int = 1):
    return s.read(chain, start_page=start, min_end_page=min_end, timeout_s=10.0)


def test_groups_along_one_prefix_share_their_pages():
    s, chain = store(), prefix_chain([1, 2, 3, 4])
    assert s.put(chain, end_pages=2)
    # pages 2, 3 and a state on top of the group ending at 2 (the tier names that base)
    assert s.put(chain, end_pages=4, first_pages=2)
    assert s.objects == 4 + 2 * 2
    assert s.used_bytes == 4 * 1_000 + 2 * 2_000 + 2 * MF2
    assert s.put(chain, end_pages=1)  # page 0 again: no new page object
    assert s.objects == 4 + 3 * 2 and s.used_bytes == 4 * 1_000 + 3 * 2_000 + 2 * MF2 + MF1
    s.check_integrity()


def test_a_different_prefix_is_a_different_object():
    s = store()
    s.put(prefix_chain([1, 2]), end_pages=2)
    assert not read(s, prefix_chain([9, 2])).found
    got = read(s, prefix_chain([1, 2, 5]))
    assert got.end_page == 2 and got.present == (2,) and got.broken == ()


def test_lru_eviction_makes_room_and_a_child_without_its_parent_is_broken():
    # room for exactly two one-page groups
    s, a, b = store(capacity=2 * (1_000 + 2_000 + MF1)), prefix_chain([1, 2]), prefix_chain([7])
    assert s.put(a, end_pages=1) and s.put(b, end_pages=1)
    assert read(s, a).end_page == 1  # a read refreshes: b is now the least recent
    assert s.put(a, end_pages=2, first_pages=1)  # needs 1,000 + 2,000 + MF1: evicts b
    assert s.evicted_groups == 1 and not read(s, b).found
    s.check_integrity()
    assert s.put(b, end_pages=1)  # evicts a's root group (least recent: it came first)
    from_root = read(s, a, min_end=2)
    assert not from_root.found and from_root.present == (2,) and from_root.broken == (2,)
    # with page 0 on device, the group of page 1 is still whole: pages below the start
    # need no manifest
    assert read(s, a, start=1, min_end=2).end_page == 2
    s.check_integrity()


def test_a_read_tries_the_deepest_groups_first_and_at_least_min_end():
    s, chain = store(), prefix_chain([1, 2, 3])
    s.put(chain, end_pages=1)
    s.put(chain, end_pages=3, first_pages=1)
    assert read(s, chain).end_page == 3
    assert read(s, chain, min_end=3).end_page == 3
    assert not s.read(chain[:2], start_page=1, min_end_page=2, timeout_s=1.0).found


def test_a_group_larger_than_the_store_is_refused():
    s = store(capacity=2_500)
    assert not s.put(prefix_chain([1]), end_pages=1)
    assert s.refused_groups == 1 and s.used_bytes == 0 and s.objects == 0


def test_transfer_time_is_latency_plus_bytes_over_bandwidth():
    s, chain = store(), prefix_chain([1, 2, 3])
    s.put(chain, end_pages=1)
    s.put(chain, end_pages=3, first_pages=1)
    assert s.put_ms == pytest.approx((0.5 + (1_000 + 2_000 + MF1) / 2e6)
                                     + (0.5 + (2_000 + 2_000 + MF2) / 2e6))
    # restore pages 1..2 onto a 1-page hit: one manifest (MF2), 2 pages and the state
    got = read(s, chain, start=1, min_end=2)
    assert got.wait_ms == pytest.approx(2 * 0.5 + (2_000 + 2_000 + MF2) / 1e6)
    assert s.get_bytes == 2_000 + 2_000 + MF2 and s.get_groups == 1
    # a lookup that finds nothing is one round trip, and no bytes
    assert read(s, prefix_chain([8])).wait_ms == 0.5 and s.get_groups == 1
    assert s.get_ms_total == pytest.approx(got.wait_ms + 0.5)


def test_a_read_slower_than_the_timeout_raises_and_records_nothing():
    s, chain = store(), prefix_chain([1])
    s.put(chain, end_pages=1)
    with pytest.raises(StoreTimeout):
        s.read(chain, start_page=0, min_end_page=1, timeout_s=1e-4)  # the read takes 1.003 ms
    assert s.get_groups == 0 and s.get_bytes == 0


def test_writes_are_acknowledged_later_as_a_real_stores_are():
    s, chain = store(capacity=2_500), prefix_chain([1, 2])
    s.write(chain[:1], first_page=0, page_ids=np.array([5]), state_slot=3)
    s.write(chain, first_page=0, page_ids=np.array([5, 6]), state_slot=4)
    assert s.pending_writes == 2
    acks = s.acks()
    assert [(a.stored, a.payload_bytes) for a in acks] == [(False, 3_000), (False, 4_000)]
    assert s.pending_writes == 0 and s.acks() == []


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
        AccountingStore(**args)
