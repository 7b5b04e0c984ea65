"""What a replay counts while it runs (`Counters`) and what it reports (`SimSummary`).

Hit accounting, per admitted request, in tokens (page-aligned, at most prompt − 1 because
the last prompt token is always computed to produce the first output token)::

    prompt:  |======= hit: KV cached ========|------- computed -------|
             |== usable: KV + state ==|~~~~~|
                                       recomputed: KV was cached, but the deepest state
                                       checkpoint is shallower, so these tokens run again

>>> c = Counters()
>>> c.prompt_tokens, c.hit_tokens, c.usable_hit_tokens = 1000, 512, 448
>>> c.token_hit_rate, c.usable_hit_rate, c.recomputed_tokens
(0.512, 0.448, 64)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kvledger.cache.host_stats import HostStats
from kvledger.sim.l3 import StoreSummary
from kvledger.sim.series import Constraint

if TYPE_CHECKING:
    from kvledger.sim.latency import LatencyStats


class HitRates:
    """Hit rates of a counter that has `prompt_tokens`, `hit_tokens` (cached KV found) and
    `usable_hit_tokens` (KV with its state: what the run skips); 0 with no prompt."""

    __slots__ = ()

    @property
    def token_hit_rate(self) -> float:
        return self.hit_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    @property
    def usable_hit_rate(self) -> float:
        return self.usable_hit_tokens / self.prompt_tokens if self.prompt_tokens else 0.0


@dataclass(slots=True, kw_only=True)
class Counters(HitRates):
    """Running totals, mutated by the replay only."""

    arrived: int = 0
    admitted: int = 0
    finished: int = 0
    prompt_tokens: int = 0  # of admitted requests
    hit_tokens: int = 0
    usable_hit_tokens: int = 0
    prefill_tokens: int = 0  # computed, including recomputed
    decode_tokens: int = 0
    checkpoints_saved: int = 0  # states the cache took from requests
    checkpoints_existing: int = 0  # the cache already had that state; the slot went back
    checkpoints_skipped: int = 0  # no slot free for the copy: the prefix stays uncached
    checkpoints_declined: int = 0  # the admission policy chose not to cache a state there
    loadback_bytes: int = 0  # host → device for admitted requests' host hits (timed)
    steps: int = 0
    queue_ms: float = 0.0  # arrival → admission, summed
    blocked_ms: dict[Constraint, float] = field(
        default_factory=lambda: dict.fromkeys(Constraint, 0.0))
    peak_pages_used: int = 0  # pages not free (requests + cache)
    peak_pages_pinned: int = 0  # pages requests own or pin: what eviction cannot take
    peak_slots_used: int = 0
    peak_slots_pinned: int = 0
    peak_running: int = 0


    @property
    def recomputed_tokens(self) -> int:
        return self.hit_tokens - self.usable_hit_tokens


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestRecord:
    """One finished request: when it ran and what the cache gave it."""

    rid: int
    arrival_ms: float
    admitted_ms: float
    first_token_ms: float  # end of the step that ran the prompt's last chunk
    finished_ms: float
    prompt_tokens: int
    output_tokens: int
    hit_tokens: int
    usable_hit_tokens: int
    free_slots_at_match: int | None = None  # device slots not held by running requests
    free_pages_at_match: int | None = None  # device pages not owned by running requests

    @property
    def queue_ms(self) -> float:
        return self.admitted_ms - self.arrival_ms

    @property
    def ttft_ms(self) -> float:
        return self.first_token_ms - self.arrival_ms


@dataclass(frozen=True, slots=True, kw_only=True)
class Unfinished:
    rid: int
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SimSummary:
    workload: str
    num_requests: int  # offered to this rank
    page_tokens: int
    token_pages: int  # T / page
    state_slots: int  # K
    max_running_requests: int  # N
    token_bytes: int  # per token (ledger 1)
    slot_bytes: int  # per state slot (ledger 2)
    counters: Counters
    unfinished: tuple[Unfinished, ...]
    evicted_pages: int
    evicted_slots: int
    host: HostStats | None  # None: no host tier in this run
    host_note: str
    duration_ms: float
    wall_s: float
    timing: str = ""  # which step-time model priced the steps
    policies: str = "engine + lru"  # state admission + state eviction
    latency: LatencyStats | None = None  # None: nothing finished
    notes: tuple[str, ...] = ()
    store: StoreSummary | None = None  # None: no store tier (--l3-size) in this run

    @property
    def evicted_tokens(self) -> int:
        return self.evicted_pages * self.page_tokens

    @property
    def binding(self) -> Constraint | None:
        """The ledger that kept requests waiting longest, if any did."""
        ledgers = {c: ms for c, ms in self.counters.blocked_ms.items() if c.is_ledger and ms > 0}
        return max(ledgers, key=lambda c: ledgers[c]) if ledgers else None

