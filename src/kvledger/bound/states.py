"""The state relaxation: the most usable hit K state slots allow when KV costs nothing.

Relaxation R_S of the offline model (`kvledger.bound.model`): the KV pool is unbounded, and a
request may leave a state at any page of its sequence (prompt or output), even one it did not
compute. A hit at request i of depth d (pages, d ≤ its window and d ≤ the KV pool's pages,
which must hold the d pages) needs the state of i's prefix d in the pool when i arrives.
Between the last earlier request a whose sequence passes that prefix and i, no request can
bring that state in, so it occupies one slot over the gaps a … i−1. Among the prefixes of i
whose last passer is the same a the deepest is worth the most for the same slot-time, so
request i's candidates are one interval per distinct last passer, the deepest prefix for
each ("the staircase"). Each request uses at most one state (its deepest); a pool of K slots
holds at most K over any gap. That is exactly `kvledger.bound.flow`'s problem, whose optimum
the min-cost flow finds: R_S is solved exactly.

>>> from kvledger.bound.trace import BoundTrace
>>> t = BoundTrace.of_paths([[1, 2, 3], [1, 2, 4], [1, 5], [1, 2, 3, 6]], [3, 3, 2, 3])
>>> state_candidates(t, max_pages=8)[3]    # (last passer, depth): request 1 shares 2, 0 shares 3
[(2, 1), (1, 2), (0, 3)]
>>> state_bound_pages(t, slots=1, max_pages=8), state_bound_pages(t, slots=2, max_pages=8)
(4, 6)
"""

from __future__ import annotations

from kvledger.bound.flow import best_interval_weight
from kvledger.bound.trace import BoundTrace


def state_candidates(trace: BoundTrace, *, max_pages: int) -> list[list[tuple[int, int]]]:
    """Per request, (last passer, depth in pages) for each distinct last passer of its
    window's prefixes, shallow first; depths at most `max_pages`."""
    last_passer: dict[int, int] = {}
    out: list[list[tuple[int, int]]] = []
    for i, (seq, window) in enumerate(zip(trace.prefixes, trace.window_pages, strict=True)):
        steps: list[tuple[int, int]] = []
        for depth in range(1, min(window, max_pages) + 1):
            a = last_passer.get(seq[depth - 1])
            if a is None:  # no earlier sequence has this prefix, so none a deeper one
                break
            if steps and steps[-1][0] == a:
                steps[-1] = (a, depth)
            else:
                steps.append((a, depth))
        out.append(steps)
        for prefix in seq:
            last_passer[prefix] = i
    return out


def state_bound_pages(trace: BoundTrace, *, slots: int, max_pages: int) -> int:
    """R_S's optimum: pages of usable hit, summed over requests."""
    intervals = [(a, i, depth) for i, steps in enumerate(state_candidates(trace, max_pages=max_pages))
                 for a, depth in steps]
    return best_interval_weight(trace.num_requests, intervals, capacity=slots)
