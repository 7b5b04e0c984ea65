"""The offline bound on usable hit: exact on tiny traces, a proven upper bound otherwise.

`offline_bound` answers, for one trace and the pools (T token pages, K state slots), the most
usable hit the offline model M (`kvledger.bound.model`) allows: any admission and eviction of
states and KV, chosen knowing the whole trace, the analogue of Belady's MIN for the hybrid's
two pools.

* EXHAUSTIVE (``exact`` true): M's optimum itself, by trying every choice, when that search is
  small (`kvledger.bound.model.exhaustive_work` ≤ `EXHAUSTIVE_LIMIT`).
* RELAXATION (``exact`` false): min(R_KV, R_S). R_KV (`kvledger.bound.kv`) drops the state
  pool and counts any cached window page as a hit; R_S (`kvledger.bound.states`) drops the KV
  pool (but caps a hit at T pages) and lets a request leave a state at any page it passes.
  Each admits every schedule M admits with at least the same value, so each is ≥ M's
  optimum, and so is the smaller; each is solved exactly (Belady's rule; a min-cost flow).

Without states (a dense model, ``state_slots`` None) the usable hit is the KV hit and the
bound is R_KV. The argument, and how M relates to the serving replay: docs, "Offline bound".

>>> from kvledger.bound.trace import BoundTrace
>>> t = BoundTrace.of_paths([[1, 2, 3], [1, 2, 4], [1, 5], [1, 2, 3, 6]], [3, 3, 2, 3])
>>> b = offline_bound(t, token_pages=8, state_slots=2)
>>> b.method.value, b.usable_hit_pages, b.kv_hit_pages, b.state_hit_pages
('exhaustive', 5, 6, 6)
>>> offline_bound(t, token_pages=8, state_slots=2, exhaustive_limit=0).usable_hit_pages
6
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from kvledger.bound.kv import kv_bound_pages
from kvledger.bound.model import EXHAUSTIVE_LIMIT, exhaustive_bound_pages, exhaustive_work
from kvledger.bound.states import state_bound_pages
from kvledger.bound.trace import BoundTrace


class BoundMethod(Enum):
    EXHAUSTIVE = "exhaustive"  # M's optimum: exact
    RELAXATION = "relaxation"  # min(R_KV, R_S): a proven upper bound on M's optimum

    @property
    def exact(self) -> bool:
        match self:
            case BoundMethod.EXHAUSTIVE:
                return True
            case BoundMethod.RELAXATION:
                return False


@dataclass(frozen=True, slots=True, kw_only=True)
class OfflineBound:
    method: BoundMethod
    page_tokens: int
    token_pages: int  # T
    state_slots: int | None  # K; None: no states (dense)
    usable_hit_pages: int  # the bound, summed over requests
    kv_hit_pages: int  # R_KV
    state_hit_pages: int | None  # R_S; None without states

    @property
    def exact(self) -> bool:
        return self.method.exact

    @property
    def usable_hit_tokens(self) -> int:
        return self.usable_hit_pages * self.page_tokens

    def usable_hit_rate(self, prompt_tokens: int) -> float:
        return self.usable_hit_tokens / prompt_tokens if prompt_tokens else 0.0


def offline_bound(trace: BoundTrace, *, token_pages: int, state_slots: int | None,
                  exhaustive_limit: int = EXHAUSTIVE_LIMIT) -> OfflineBound:
    """The bound for `trace` on T = `token_pages` and K = `state_slots` (see the module)."""
    if token_pages < 0 or (state_slots is not None and state_slots < 0):
        raise ValueError(f"pools of {token_pages} pages and {state_slots} slots: expected ≥ 0")
    kv = kv_bound_pages(trace, pages=token_pages)
    if state_slots is None:
        return OfflineBound(method=BoundMethod.RELAXATION, page_tokens=trace.page_tokens,
                            token_pages=token_pages, state_slots=None, usable_hit_pages=kv,
                            kv_hit_pages=kv, state_hit_pages=None)
    states = state_bound_pages(trace, slots=state_slots, max_pages=token_pages)
    method, best = BoundMethod.RELAXATION, min(kv, states)
    if exhaustive_work(trace, pages=token_pages, slots=state_slots) <= exhaustive_limit:
        method = BoundMethod.EXHAUSTIVE
        best = exhaustive_bound_pages(trace, pages=token_pages, slots=state_slots)
    return OfflineBound(method=method, page_tokens=trace.page_tokens, token_pages=token_pages,
                        state_slots=state_slots, usable_hit_pages=best, kv_hit_pages=kv,
                        state_hit_pages=states)
