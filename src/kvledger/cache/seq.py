"""What HybridCache records per running request, per chunk, and in total.

A running request holds at most ``STATE_SLOTS_PER_REQUEST`` state slots that cannot be
evicted: its working state, the track slot (the state at the next grid point), the branch
slot (the state at ``mamba_branching_seqlen``, until the tree takes it) and the tree state its
lock pins. ``HybridCache`` admits while ``4 × running ≤ slots``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from kvledger.tree import LockReceipt

STATE_SLOTS_PER_REQUEST = 4  # working + track + branch + the pinned tree state


@dataclass(slots=True, kw_only=True)
class CacheSeq:
    """One running request's holdings (the facade's record; read, never write, outside)."""

    row: int  # request row: req_to_token row and compress-tail row
    state_slot: int  # the request's own working state
    track_slot: int  # receives the state at the next grid point
    branch_slot: int | None  # receives the state at `branch_tokens`, then goes to the tree
    branch_tokens: int | None  # mamba_branching_seqlen still to save
    track_tokens: int | None  # grid length whose state sits in track_slot, not yet inserted
    computed_tokens: int  # tokens with KV and state (the next chunk starts here)
    allocated_tokens: int  # positions with a token slot (computed, or the chunk in flight)
    cached_tokens: int  # prefix owned by the tree and locked by `receipt`
    receipt: LockReceipt | None
    reserved_pages: int  # pages this request may still allocate


@dataclass(frozen=True, slots=True, kw_only=True)
class Extension:
    token_locs: torch.Tensor  # (end,) int64 slots of positions 0..end−1
    checkpoints: tuple[tuple[int, int], ...]  # (length_tokens, state slot) to save


@dataclass(slots=True)
class CacheStats:
    admitted: int = 0
    prefix_hit_tokens: int = 0
    loadback_tokens: int = 0  # KV tokens copied host → device
    loadback_states: int = 0
    loadback_failures: int = 0  # loadbacks refused (no room) or aborted: recomputed instead
    evicted_tokens: int = 0
    evicted_states: int = 0
    inserted_tokens: int = 0
    branch_states: int = 0  # states saved at mamba_branching_seqlen and kept by the tree
