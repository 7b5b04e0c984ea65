"""The KV relaxation: Belady's MIN over page prefixes, the most KV hit a pool of T pages allows.

Relaxation R_KV of the offline model (`kvledger.bound.model`): states cost nothing, and a
request's KV hit counts every page of its window that is cached when it arrives, consecutive
or not (a usable hit of d pages needs all d cached, so it is never more). Requests run one at
a time in arrival order, each referencing its sequence's pages in order: a page in the window
is a reference that can hit; every other page (the rest of the prompt, the output) only
brings its prefix in. A page may stay cached from one reference to the next, at one page of
the pool for that time, and a hit is exactly such a kept interval ending at a window
reference. So R_KV is the most intervals between consecutive references of the same page
(ending in a window) that T pages can hold at once: unit weights, which the furthest-next-use
rule solves exactly (Belady 1966; with the option not to cache, Mattson et al. 1970's
OPT). An interval ending at a non-window reference is worth nothing, so a page's next use is
its next reference only when that one is in a window.

>>> from kvledger.bound.trace import BoundTrace
>>> t = BoundTrace.of_paths([[1, 2], [1, 2], [3], [1, 2]], [2, 2, 1, 2])
>>> kv_bound_pages(t, pages=2), kv_bound_pages(t, pages=1), kv_bound_pages(t, pages=3)
(4, 2, 4)
"""

from __future__ import annotations

import heapq

from kvledger.bound.trace import BoundTrace

_NEVER = float("inf")


def _references(trace: BoundTrace) -> tuple[list[int], list[bool]]:
    items, counted = [], []
    for seq, window in zip(trace.prefixes, trace.window_pages, strict=True):
        items.extend(seq)
        counted.extend(j < window for j in range(len(seq)))
    return items, counted


def kv_bound_pages(trace: BoundTrace, *, pages: int) -> int:
    """R_KV's optimum: window pages found cached, summed over requests."""
    items, counted = _references(trace)
    next_use: list[float] = [_NEVER] * len(items)
    later: dict[int, int] = {}
    for t in range(len(items) - 1, -1, -1):
        nxt = later.get(items[t])
        if nxt is not None and counted[nxt]:
            next_use[t] = nxt
        later[items[t]] = t
    if pages <= 0:
        return 0
    cached: dict[int, float] = {}  # item -> its next (window) use
    furthest: list[tuple[float, int]] = []  # (-next use, item), stale entries skipped
    hits = 0
    for t, x in enumerate(items):
        if x in cached:
            hits += counted[t]
            del cached[x]
        if next_use[t] == _NEVER:
            continue
        cached[x] = next_use[t]
        heapq.heappush(furthest, (-next_use[t], x))
        while len(cached) > pages:
            nu, victim = heapq.heappop(furthest)
            if cached.get(victim) == -nu:
                del cached[victim]
    return hits
