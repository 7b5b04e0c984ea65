"""PagedTokenAllocator: whole pages, tail-first extend, page-crossing decode, free by page."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kvledger.pools.errors import AllocatorError
from kvledger.pools.paged import NULL_PAGE, PagedTokenAllocator


def test_alloc_hands_out_whole_pages_after_the_null_page():
    a = PagedTokenAllocator(num_pages=4, page_tokens=64)
    assert a.num_token_slots == 5 * 64  # T + P rows: page 0 is padding
    locs = a.alloc(128)
    assert locs.tolist() == list(range(64, 192))
    with pytest.raises(ValueError, match="multiple"):
        a.alloc(65)


def test_extend_fills_the_last_page_before_taking_new_ones():
    a = PagedTokenAllocator(num_pages=8, page_tokens=4)
    first = a.alloc_extend([0], [7], [-1])  # positions 0..6: pages 1, 2
    assert first.tolist() == [4, 5, 6, 7, 8, 9, 10]
    more = a.alloc_extend([7], [14], [int(first[-1])])  # 7 fills page 2, then pages 3, 4
    assert more.tolist() == [11, 12, 13, 14, 15, 16, 17]
    assert a.num_free_pages == 4


def test_batched_extend_concatenates_requests_in_order():
    a = PagedTokenAllocator(num_pages=8, page_tokens=4)
    r0 = a.alloc_extend([0], [2], [-1])
    r1 = a.alloc_extend([0], [4], [-1])
    got = a.alloc_extend([2, 4, 0], [5, 5, 1], [int(r0[-1]), int(r1[-1]), -1])
    # r0: positions 2, 3 in its page 1 (slots 6, 7), position 4 on new page 3;
    # r1: its page is full, position 4 on new page 4; r2: new page 5.
    assert got.tolist() == [6, 7, 12, 16, 20]


def test_decode_opens_a_page_only_at_a_page_boundary():
    a = PagedTokenAllocator(num_pages=4, page_tokens=4)
    locs = a.alloc_extend([0, 0], [3, 4], [-1, -1])  # r0 in page 1, r1 fills page 2
    got = a.alloc_decode(seq_lens=[4, 5], last_locs=[int(locs[2]), int(locs[-1])])
    assert got.tolist() == [7, 12]  # r0 stays on page 1; r1 crosses into page 3
    assert a.num_free_pages == 1


def test_running_out_returns_none_and_takes_nothing():
    a = PagedTokenAllocator(num_pages=2, page_tokens=4)
    assert a.alloc_extend([0, 0], [5, 4], [-1, -1]) is None  # needs 3 pages
    assert a.num_free_pages == 2
    assert a.pages_needed_extend([0, 0], [5, 4]) == 3
    a.alloc(8)
    assert a.alloc_decode([1], [-1]) is None
    a.check_integrity()


def test_free_is_by_page_and_misuse_raises():
    a = PagedTokenAllocator(num_pages=3, page_tokens=4)
    locs = a.alloc_extend([0], [6], [-1])
    a.free(locs[:1])  # frees the whole page holding token slot 4
    assert a.num_free_pages == 2
    with pytest.raises(AllocatorError, match="not allocated"):
        a.free(locs[:1])
    with pytest.raises(AllocatorError, match="reserved"):
        a.free([0])  # a padding slot of NULL_PAGE
    with pytest.raises(AllocatorError, match="not allocated"):
        a.free_pages([3])  # never handed out


def test_free_takes_each_page_once_however_its_slots_are_listed():
    a = PagedTokenAllocator(num_pages=4, page_tokens=4)
    first, second = a.alloc(8)[[0, 4]]  # slot 4 (page 1) and slot 8 (page 2)
    a.free([first, second, first + 1, second + 3, first + 2])  # pages 1, 2, 1, 2, 1
    assert a.num_free_pages == 4
    a.check_integrity()
    a.alloc(4)
    with pytest.raises(AllocatorError, match="not allocated"):
        a.free([8, 16])  # page 2 is held, page 4 never was: nothing is freed
    assert a.num_free_pages == 3


def test_a_last_loc_that_contradicts_its_position_raises():
    a = PagedTokenAllocator(num_pages=4, page_tokens=4)
    locs = a.alloc_extend([0], [3], [-1])
    with pytest.raises(AllocatorError, match="does not match position 2"):
        a.alloc_extend([3], [4], [int(locs[1])])  # slot of position 1 given for position 2
    with pytest.raises(AllocatorError, match="offset"):  # the batched path says the same
        a.alloc_extend([3, 0], [4, 1], [int(locs[1]), -1])
    with pytest.raises(AllocatorError, match="free page"):
        a.alloc_decode([3], [9])  # right offset, but page 2 is free
    with pytest.raises(ValueError, match="prefix_lens"):
        a.alloc_extend([3], [2], [int(locs[-1])])


class PagedMachine(RuleBasedStateMachine):
    """Random prefill / chunked extend / batched decode / finish against a dict model.

    The model keeps every live request's token slots by position; after every step the
    allocator's integrity holds, slots are disjoint, each token sits at its position's page
    offset, and the free page count is capacity − pages held.
    """

    PAGES, P = 12, 4

    def __init__(self) -> None:
        super().__init__()
        self.a = PagedTokenAllocator(num_pages=self.PAGES, page_tokens=self.P)
        self.reqs: dict[int, list[int]] = {}
        self.next_id = 0
        self.freed: list[np.ndarray] = []

    def _pages_held(self) -> set[int]:
        return {loc // self.P for locs in self.reqs.values() for loc in locs}

    def _fits(self, need: int) -> bool:
        return need <= self.PAGES - len(self._pages_held())

    @rule(lengths=st.lists(st.integers(1, 11), min_size=1, max_size=3))
    def prefill(self, lengths: list[int]) -> None:
        need = sum(-(-n // self.P) for n in lengths)
        got = self.a.alloc_extend([0] * len(lengths), lengths, [-1] * len(lengths))
        if not self._fits(need):
            assert got is None
            return
        assert got is not None
        for n in lengths:
            self.reqs[self.next_id], got = got[:n].tolist(), got[n:]
            self.next_id += 1

    @precondition(lambda self: self.reqs)
    @rule(data=st.data(), n=st.integers(1, 9))
    def extend(self, data, n: int) -> None:
        rid = data.draw(st.sampled_from(sorted(self.reqs)))
        locs = self.reqs[rid]
        room = -len(locs) % self.P
        need = -(-max(n - room, 0) // self.P)
        got = self.a.alloc_extend([len(locs)], [len(locs) + n], [locs[-1]])
        if not self._fits(need):
            assert got is None
            return
        assert got is not None
        locs.extend(got.tolist())

    @precondition(lambda self: self.reqs)
    @rule(data=st.data())
    def decode(self, data) -> None:
        rids = data.draw(st.lists(st.sampled_from(sorted(self.reqs)), min_size=1, unique=True))
        seqs = [len(self.reqs[r]) + 1 for r in rids]
        need = sum((s - 1) % self.P == 0 for s in seqs)
        got = self.a.alloc_decode(seqs, [self.reqs[r][-1] for r in rids])
        if not self._fits(need):
            assert got is None
            return
        assert got is not None
        for r, loc in zip(rids, got.tolist(), strict=True):
            self.reqs[r].append(loc)

    @precondition(lambda self: self.reqs)
    @rule(data=st.data())
    def finish(self, data) -> None:
        rid = data.draw(st.sampled_from(sorted(self.reqs)))
        locs = np.array(self.reqs.pop(rid))
        self.a.free(locs)
        self.freed.append(locs)

    @precondition(lambda self: self.freed)
    @rule(data=st.data())
    def double_free_raises(self, data) -> None:
        locs = data.draw(st.sampled_from(self.freed))
        if any(loc // self.P in self._pages_held() for loc in locs.tolist()):
            return  # the page was reused by a live request: freeing it is not a double free
        with pytest.raises(AllocatorError):
            self.a.free(locs)

    @invariant()
    def consistent(self) -> None:
        self.a.check_integrity()
        all_locs = [loc for locs in self.reqs.values() for loc in locs]
        assert len(all_locs) == len(set(all_locs)), "a token slot handed out twice"
        owners: dict[int, int] = {}
        for rid, locs in self.reqs.items():
            for pos, loc in enumerate(locs):
                assert loc // self.P != NULL_PAGE
                assert loc % self.P == pos % self.P, "token not at its position's page offset"
                assert owners.setdefault(loc // self.P, rid) == rid, "a page shared by requests"
        assert self.a.num_free_pages == self.PAGES - len(self._pages_held())


TestPagedMachine = PagedMachine.TestCase
TestPagedMachine.settings = settings(max_examples=80, stateful_step_count=30, deadline=None)
