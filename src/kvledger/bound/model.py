"""The offline model of the hybrid's two pools, and its exact optimum by exhaustive search.

Model M (what "any admission and eviction of states and KV" may do, given the whole trace):

* requests run one at a time, in arrival order (as the FULL-only ceiling runs them);
* before request i the pools hold a set P of page prefixes (KV, at most T pages) and a set S
  of states, each the state after some page prefix (at most K slots);
* i's usable hit h_i is the deepest d ≤ its window with prefix d's state in S and all of
  prefix d's pages in P (0 if none): the engine always resumes from the deepest state;
* after i, any P' ⊆ P ∪ (i's pages) with |P'| ≤ T and any S' ⊆ S ∪ {i's states at depths
  h_i + 1 … end of its sequence} with |S'| ≤ K: a request can leave a state wherever it
  computed (a relaxation of the engine's checkpoint points: any admission policy picks among
  those), and the cache keeps or drops anything.

The value is Σ h_i pages. More in the pools is not always better (a deeper hit leaves fewer
depths for the request to checkpoint), so the search tries every subset, restricted to the
prefixes some later window can use.

>>> from kvledger.bound.trace import BoundTrace
>>> t = BoundTrace.of_paths([[1, 2, 3], [1, 2, 4], [1, 5], [1, 2, 3, 6]], [3, 3, 2, 3])
>>> exhaustive_bound_pages(t, pages=8, slots=1), exhaustive_bound_pages(t, pages=8, slots=2)
(4, 5)
>>> exhaustive_bound_pages(t, pages=2, slots=2)    # a 2-page KV pool caps every hit at 2
5
"""

from __future__ import annotations

from functools import cache
from itertools import chain, combinations
from math import comb

from kvledger.bound.trace import BoundTrace

# Exhaustive search is "tractable" while its work estimate stays below this many steps.
EXHAUSTIVE_LIMIT = 200_000
# Beyond these sizes the estimate itself is not computed: the search is out of reach anyway.
MAX_EXHAUSTIVE_REQUESTS = 16
MAX_EXHAUSTIVE_PREFIXES = 32


def _useful_after(trace: BoundTrace) -> list[frozenset[int]]:
    """Per request i, the prefixes in the windows of requests after i."""
    out: list[frozenset[int]] = [frozenset()] * trace.num_requests
    acc: set[int] = set()
    for i in range(trace.num_requests - 1, -1, -1):
        out[i] = frozenset(acc)
        acc.update(trace.prefixes[i][: trace.window_pages[i]])
    return out


def _subsets(items: frozenset[int], most: int) -> list[frozenset[int]]:
    ordered = sorted(items)
    return [frozenset(c) for c in chain.from_iterable(
        combinations(ordered, k) for k in range(min(most, len(ordered)) + 1))]


def exhaustive_work(trace: BoundTrace, *, pages: int, slots: int) -> int:
    """An estimate of the search's steps: per request, pool contents it may keep, squared
    (a number above any limit when the trace is too large to be worth estimating)."""
    distinct = {p for seq in trace.prefixes for p in seq}
    if trace.num_requests > MAX_EXHAUSTIVE_REQUESTS or len(distinct) > MAX_EXHAUSTIVE_PREFIXES:
        return 1 << 62
    useful = _useful_after(trace)
    seen: set[int] = set()
    work = 0
    for i, seq in enumerate(trace.prefixes):
        seen.update(seq)
        c = len(seen & useful[i])
        n_p = sum(comb(c, k) for k in range(min(pages, c) + 1))
        n_s = sum(comb(c, k) for k in range(min(slots, c) + 1))
        work += (n_p * n_s) ** 2
    return work


def exhaustive_bound_pages(trace: BoundTrace, *, pages: int, slots: int) -> int:
    """M's optimum, by trying every choice (tiny traces only: see `exhaustive_work`)."""
    useful = _useful_after(trace)
    n = trace.num_requests

    @cache
    def best(i: int, kv: frozenset[int], states: frozenset[int]) -> int:
        if i == n:
            return 0
        seq, window = trace.prefixes[i], trace.window_pages[i]
        hit = 0
        for d in range(1, window + 1):
            if seq[d - 1] not in kv:
                break
            if seq[d - 1] in states:
                hit = d
        keep_kv = (kv | set(seq)) & useful[i]
        keep_states = (states | set(seq[hit:])) & useful[i]
        return hit + max(best(i + 1, p, s) for p in _subsets(keep_kv, pages)
                         for s in _subsets(keep_states, slots))

    return best(0, frozenset(), frozenset())
