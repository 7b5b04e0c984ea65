"""The split of a host budget between KV pages and state slots, from the trace's reuse distances.

A hybrid model's host tier holds two things a reuse needs together: the KV pages of the
prefix and the state at its end. SGLang sizes both host pools by the same ratio to their
device pools; when states are what runs out (a state slot of GLM-5.3-Flash holds as many
bytes as 20,000 tokens of fp8 KV), that split loses reuse a different one keeps.

`choose_state_share` picks the share s of the host budget B given to states, on a grid of
shares, maximising the reuse an LRU pair of pools would keep:

1. every request's reuse is its longest prefix an earlier request had (d pages), last seen
   δ requests ago, with N_pages new pages written in between (sum of each later request's
   pages past its own reuse) and N_states states still waiting: those of the requests in
   between that no request resumed from before this one (a consumed state is spent and
   goes first, `kvledger.cache.policies.spent`);
2. the reuse survives when both pools still hold it: N_pages ≤ T + (1 − s)·B / page_bytes
   and N_states · states_per_request ≤ K + s·B / slot_bytes (T, K: the device pools);
3. the chosen s maximises Σ d over surviving reuses (ties: the smaller s), among shares of
   at least `floor`.

It is an estimate, not a bound: LRU stack distances stand in for the policies' orders.

>>> from kvledger.bound.trace import BoundTrace
>>> t = BoundTrace.of_paths([[1, 2, 3, 4], [5, 6, 7, 8], [1, 2, 3, 9], [5, 6, 7, 9]],
...                         [4, 4, 4, 4])
>>> s = reuse_distances(t)
>>> s.distances, s.pages_between, s.reused_pages   # requests 2 and 3 reuse 0 and 1
((2, 2), (4, 1), (3, 3))
>>> s.states_between   # the state of the request in between still waits (never reused)
(1, 1)
>>> choose_state_share(s, budget_bytes=10, page_bytes=1, slot_bytes=4,   # 0.5: both kept
...                    device_pages=0, device_slots=0, shares=(0.2, 0.5, 0.8))
0.5
>>> choose_state_share(s, budget_bytes=20, page_bytes=1, slot_bytes=4,   # a bigger budget
...                    device_pages=0, device_slots=0, shares=(0.2, 0.5, 0.8))
0.2
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kvledger.bound.trace import BoundTrace

SHARES = tuple(round(0.05 * i, 2) for i in range(1, 20))  # 0.05 .. 0.95


@dataclass(frozen=True, slots=True, kw_only=True)
class ReuseDistances:
    """One entry per request that reuses a prefix an earlier request had."""

    distances: tuple[int, ...]  # δ: requests since that prefix was last seen
    pages_between: tuple[int, ...]  # new pages written by the requests in between
    states_between: tuple[int, ...]  # requests in between whose state was not yet reused
    reused_pages: tuple[int, ...]  # d: pages of the reused prefix


def reuse_distances(trace: BoundTrace) -> ReuseDistances:
    """Each request's deepest earlier-seen prefix within its window, and how far back."""
    last_seen: dict[int, int] = {}
    new_pages = np.zeros(trace.num_requests + 1, dtype=np.int64)  # prefix sums below
    dists: list[int] = []
    between_at: list[tuple[int, int]] = []
    reused: list[int] = []
    for i, (seq, window) in enumerate(zip(trace.prefixes, trace.window_pages, strict=True)):
        depth, at = 0, -1
        for j in range(window - 1, -1, -1):
            seen = last_seen.get(seq[j])
            if seen is not None:
                depth, at = j + 1, seen
                break
        if depth:
            dists.append(i - at)
            between_at.append((at, i))
            reused.append(depth)
        new_pages[i + 1] = len(seq) - depth
        for h in seq:
            last_seen[h] = i
    written = np.cumsum(new_pages)
    between = tuple(int(written[i] - written[at + 1]) for at, i in between_at)
    # first_reuse[k]: the first request that resumed from request k's prefix (n: none)
    first_reuse = np.full(trace.num_requests, trace.num_requests, dtype=np.int64)
    for at, i in between_at:
        first_reuse[at] = min(first_reuse[at], i)
    waiting = tuple(int((first_reuse[at + 1:i] > i).sum()) for at, i in between_at)
    return ReuseDistances(distances=tuple(dists), pages_between=between,
                          states_between=waiting, reused_pages=tuple(reused))


def kept_pages(reuse: ReuseDistances, *, pages: int, slots: float,
               states_per_request: float = 1.0) -> int:
    """Σ d over reuses both pools would still hold (see the module, step 2)."""
    if not reuse.distances:
        return 0
    keep = ((np.asarray(reuse.pages_between) <= pages)
            & (np.asarray(reuse.states_between) * states_per_request <= slots))
    return int(np.asarray(reuse.reused_pages)[keep].sum())


def choose_state_share(reuse: ReuseDistances, *, budget_bytes: int, page_bytes: int,
                       slot_bytes: int, device_pages: int, device_slots: int,
                       states_per_request: float = 1.0,
                       shares: Sequence[float] = SHARES, floor: float = 0.0) -> float:
    """The share of `budget_bytes` for state slots that keeps the most reuse (module), at
    least `floor` (the bench passes SGLang's own share: the estimate only ever moves budget
    towards states, where the reuse distances say they run out)."""
    if budget_bytes <= 0 or page_bytes <= 0 or slot_bytes <= 0 or not shares:
        raise ValueError(f"host budget {budget_bytes} B, pages of {page_bytes} B, slots of "
                         f"{slot_bytes} B, shares {tuple(shares)}: expected positive values")
    shares = [s for s in shares if s >= floor] or [floor]
    best, best_kept = shares[0], -1
    for share in shares:
        pages = device_pages + int((1 - share) * budget_bytes // page_bytes)
        slots = device_slots + int(share * budget_bytes // slot_bytes)
        kept = kept_pages(reuse, pages=pages, slots=slots,
                          states_per_request=states_per_request)
        if kept > best_kept:
            best, best_kept = share, kept
    return best
