"""What HybridCache records per running request, what it answers, and what it counts.

A running request holds the plan's ``held_slots_per_request`` state slots (resolve.py):
its working state plus the checkpoint track slots, as SGLang's HybridReqToTokenPool hands each
request ``mamba_pool_idx`` and, with extra_buffer, ``mamba_ping_pong_track_buffer`` (2 slots
with the overlap scheduler, 1 without); no_buffer holds the working state only. The tree
state its lock pins is the tree's, not the request's. Every slot is allocated at admission,
so a running request never waits for a state slot; only caching an unfinished prefix takes
a fresh one (SGLang forks the track state into it), and is skipped when none can be had.

Its sequence (prompt, then the fed outputs) in pages::

    |== tree (locked by receipt) ==|===== own pages =====|.. reserved, not allocated ..|
    0                       cached_tokens     held_pages · P         ⌈final_tokens / P⌉
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

if TYPE_CHECKING:
    from kvledger.tree import LockReceipt

EMPTY = np.zeros(0, dtype=np.int64)


class CheckpointMode(Enum):
    """How a request's state reaches the tree (SGLang --mamba-scheduler-strategy)."""

    TRACKED = "extra_buffer"  # ping-pong track slots hold grid-aligned checkpoints
    EXACT = "no_buffer"  # the working state at the cached end is the checkpoint
    NONE = "none"  # a dense model: no state component at all


class CacheSeq:
    """One running request's holdings (the facade's record; read, never write, outside)."""

    __slots__ = (
        "row", "prompt_tokens", "final_tokens", "slots", "next_track", "last_track_tokens",
        "last_track_index", "last_track_branch", "branch_tokens", "then_branch_tokens", "ticket",
        "computed_tokens", "allocated_tokens",
        "cached_tokens", "held_pages", "receipt", "reserved_pages", "tree_ids", "own",
        "num_own", "hit_tokens", "usable_hit_tokens",
    )

    def __init__(self, *, row: int, prompt_tokens: int, final_tokens: int) -> None:
        self.row = row  # request row (req_to_token / compress-tail row in real bytes)
        self.prompt_tokens = prompt_tokens
        self.final_tokens = final_tokens  # KV positions the request will ever compute
        self.slots: list[int] = []  # working slot first, then the track slots
        self.next_track = 1  # index in `slots` the next checkpoint goes to
        self.last_track_tokens: int | None = None  # where a track slot holds a state
        self.last_track_index = 1
        self.last_track_branch = False  # that state is the branching point's
        self.branch_tokens: int | None = None  # mamba_branching_seqlen still to save
        self.then_branch_tokens: int | None = None  # a deeper point to save after it
        self.ticket = None  # what state admission decided at admission (policies.Ticket)
        self.computed_tokens = 0  # positions with KV and state (the next chunk starts here)
        self.allocated_tokens = 0  # positions with a token slot (computed, or in flight)
        self.cached_tokens = 0  # page-aligned prefix owned by the tree, locked by `receipt`
        self.held_pages = 0  # pages holding positions 0..allocated−1 (tree's and own)
        self.receipt: LockReceipt | None = None
        self.reserved_pages = 0  # pages this request may still allocate
        self.tree_ids = EMPTY  # accounting: page ids of the cached prefix
        self.own: list[np.ndarray] = []  # accounting: own page ids, in chunks
        self.num_own = 0
        self.hit_tokens = 0  # cached KV found at admission (device or host)
        self.usable_hit_tokens = 0  # of which usable (backed by a state), after loadback

    @property
    def num_own_pages(self) -> int:
        """Pages the request allocated itself and still owns (not the tree's)."""
        return self.num_own


@dataclass(frozen=True, slots=True, kw_only=True)
class Extension:
    """States the model must save while computing a chunk: (length_tokens, state slot)."""

    checkpoints: tuple[tuple[int, int], ...]


class Shortfall(NamedTuple):
    """Why an admission waits: each ledger that is short now (nothing was changed)."""

    rows: bool  # no request row free (running requests N)
    pages: bool  # token pages T: free + evictable − reserved < what the request needs
    slots: bool  # state slots K: free + evictable < the slots a request holds

    def __bool__(self) -> bool:
        return self.rows or self.pages or self.slots


@dataclass(slots=True)
class CacheStats:
    admitted: int = 0
    prompt_tokens: int = 0  # of admitted requests
    hit_tokens: int = 0  # cached KV found at admission, device or host
    prefix_hit_tokens: int = 0  # usable hits (KV and state), after any loadback
    loadback_tokens: int = 0  # KV tokens copied host → device
    loadback_states: int = 0
    loadback_failures: int = 0  # loadbacks refused (no room) or aborted: recomputed instead
    evicted_tokens: int = 0  # by this facade's own evictions
    evicted_states: int = 0
    inserted_tokens: int = 0
    checkpoints_saved: int = 0  # states the tree took from requests
    checkpoints_existing: int = 0  # the tree already had that state; the slot went back
    checkpoints_skipped: int = 0  # no slot for the copy: the prefix stays uncached
    checkpoints_declined: int = 0  # the state admission policy chose not to cache there
    branch_states: int = 0  # of the saved, states at mamba_branching_seqlen
