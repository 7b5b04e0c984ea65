"""What-if (never the default): ping-pong track slots borrowed from a small shared pool.

Today SGLang's HybridReqToTokenPool (mem_cache/memory_pool.py, ``HybridReqToTokenPool.alloc``)
gives every running request of an extra_buffer hybrid model its working slot
(``mamba_pool_idx``) plus ``mamba_ping_pong_track_buffer_size`` track slots (2 with the
overlap scheduler) for the life of the request, so N running requests pin N · (1 + track)
state slots even in the many steps that save no checkpoint. The what-if: a request holds only
its working slot; a step that saves a checkpoint borrows a track slot from a shared pool of
P slots, and the slot leaves the pool when the tree takes the state (cache_unfinished_req
already hands the track state to the tree and a fresh slot takes its place). Pinned slots fall
from N · (1 + track) to N + P.

What SGLang would have to change: allocate ``mamba_ping_pong_track_buffer`` per step (in the
scheduler, for the requests whose chunk end or decode track boundary
(``_mamba_check_track_boundary``) falls in the batch) instead of in
``HybridReqToTokenPool.alloc``; size ``_calculate_mamba_ratio``'s planning ratio with 1 + P/N
instead of 3 + track; and wait (not fail) when the pool is empty, skipping that checkpoint.

Assumption of the arithmetic: every running row is busy (N running), where pinning is worst.
The simulated what-if (`shared_track_plan`) gives the pool the slots freed at that point, so
its hit rate is an upper bound that is exact at full concurrency.

Worked example (K = 205, N = 41, 3 held, P = 8): today 123 pinned, 82 left for the cache;
shared 41 + 8 = 49 pinned, 156 left; 74 slots freed.

>>> e = SlotEconomy(state_slots=205, running_requests=41, held_slots_per_request=3, pool_slots=8)
>>> e.pinned_today_slots, e.pinned_shared_slots, e.freed_slots, e.cacheable_shared_slots
(123, 49, 74, 156)
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kvledger.sglang.plan import SglangPlan

DEFAULT_POOL_SLOTS = 8  # shared track slots: enough for 8 checkpoints saved in one step
LABEL = "what-if (not SGLang today): shared track-slot pool"


@dataclass(frozen=True, slots=True)
class SlotEconomy:
    state_slots: int  # K, the plan's usable state slots
    running_requests: int  # N
    held_slots_per_request: int  # working + ping-pong track slots, today
    pool_slots: int  # P, the shared track pool

    def __post_init__(self) -> None:
        track = self.held_slots_per_request - 1
        if track < 1:
            raise ValueError("--slot-economy shared-track: needs track slots per request "
                             f"(held {self.held_slots_per_request}; expected extra_buffer)")
        if not 1 <= self.pool_slots <= self.running_requests * track:
            raise ValueError(f"--slot-economy shared-track={self.pool_slots}: expected a pool "
                             f"of 1 to {self.running_requests * track} slots (N {self.running_requests}"
                             f" × {track} track slots)")

    @property
    def pinned_today_slots(self) -> int:
        return self.running_requests * self.held_slots_per_request

    @property
    def pinned_shared_slots(self) -> int:
        return (self.running_requests  # one working slot per running request
                + self.pool_slots)  # the shared track pool

    @property
    def freed_slots(self) -> int:
        return self.pinned_today_slots - self.pinned_shared_slots

    @property
    def cacheable_today_slots(self) -> int:
        return max(0, self.state_slots - self.pinned_today_slots)

    @property
    def cacheable_shared_slots(self) -> int:
        return max(0, self.state_slots - self.pinned_shared_slots)


def slot_economy(plan: SglangPlan, pool_slots: int = DEFAULT_POOL_SLOTS) -> SlotEconomy:
    """The what-if's arithmetic for `plan` (a hybrid plan with extra_buffer track slots)."""
    cap = plan.capacity
    return SlotEconomy(state_slots=cap.state_slots, running_requests=cap.max_running_requests,
                       held_slots_per_request=plan.layout.held_slots_per_request,
                       pool_slots=pool_slots)


def shared_track_plan(plan: SglangPlan, economy: SlotEconomy) -> SglangPlan:
    """`plan` with the freed slots given to the state pool (the simulated what-if): requests
    still hold today's slots, so at N running the cache has exactly the shared economy's
    room, and never less below N (an upper bound there)."""
    cap = replace(plan.capacity, state_slots=plan.capacity.state_slots + economy.freed_slots)
    return replace(plan, capacity=cap, notes=(*plan.notes, LABEL))


def parse_slot_economy(text: str) -> int:
    """``shared-track`` or ``shared-track=P`` → P; anything else is an input error."""
    name, _, value = text.partition("=")
    if name != "shared-track":
        raise ValueError(f"--slot-economy {text}: expected shared-track or shared-track=POOL_SLOTS")
    if not value:
        return DEFAULT_POOL_SLOTS
    if not value.isdigit():
        raise ValueError(f"--slot-economy {text}: POOL_SLOTS must be a whole number, got {value!r}")
    return int(value)
