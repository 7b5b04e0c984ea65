"""Page runs: turning token slots into whole pages and pairing them into contiguous runs.

The host tier moves whole pages. A tree node's token slots are whole pages in order (the
allocators hand out pages, nodes are page-aligned), so `slots_to_pages` checks that shape and
returns one page id per page. `page_runs` then cuts a list of (source page, destination
page) pairs into maximal runs where both sides advance by one: each run is one slice copy
instead of one copy per page, so a fresh allocation (ascending pages) costs a few copies.

    src pages  7 8 9 | 3 | 12 13       runs (start_src, start_dst, length):
    dst pages  0 1 2 | 5 | 6  7   ->   (7, 0, 3), (3, 5, 1), (12, 6, 2)

>>> slots_to_pages(np.array([8, 9, 10, 11, 4, 5, 6, 7]), page_tokens=4).tolist()
[2, 1]
>>> page_runs(np.array([7, 8, 9, 3, 12, 13]), np.array([0, 1, 2, 5, 6, 7]))
[PageRun(src=7, dst=0, length=3), PageRun(src=3, dst=5, length=1), PageRun(src=12, dst=6, length=2)]
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class PageRun(NamedTuple):
    src: int  # first source page (or slot)
    dst: int  # first destination page (or slot)
    length: int  # pages in the run


def slots_to_pages(slots: np.ndarray, page_tokens: int) -> np.ndarray:
    """Page ids of token slots that form whole pages in order; ValueError otherwise."""
    slots = np.asarray(slots, dtype=np.int64)
    if slots.size % page_tokens:
        raise ValueError(f"{slots.size} token slots are not whole {page_tokens}-token pages")
    grid = slots.reshape(-1, page_tokens)
    pages = grid[:, 0] // page_tokens
    expected = pages[:, None] * page_tokens + np.arange(page_tokens, dtype=np.int64)
    if not np.array_equal(grid, expected):
        raise ValueError("token slots do not form whole pages in order (offset 0..P−1 per page)")
    return pages


def pages_to_slots(pages: np.ndarray, page_tokens: int) -> np.ndarray:
    offsets = np.arange(page_tokens, dtype=np.int64)
    return (np.asarray(pages, dtype=np.int64)[:, None] * page_tokens + offsets).reshape(-1)


def page_runs(src: np.ndarray, dst: np.ndarray) -> list[PageRun]:
    """Maximal runs of pairs where source and destination both advance by one."""
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    assert src.shape == dst.shape, f"{src.size} source pages for {dst.size} destination pages"
    if src.size == 0:
        return []
    if src.size == 1:
        return [PageRun(int(src[0]), int(dst[0]), 1)]
    steps = (src[1:] - src[:-1] != 1) | (dst[1:] - dst[:-1] != 1)
    starts = np.concatenate(([0], np.flatnonzero(steps) + 1))
    ends = np.concatenate((starts[1:], [src.size]))
    return [PageRun(s, d, n) for s, d, n in zip(src[starts].tolist(), dst[starts].tolist(),
                                                (ends - starts).tolist(), strict=True)]
