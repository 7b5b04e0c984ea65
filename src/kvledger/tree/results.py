"""What the tree's operations return. All lengths are in tokens, all slots are indices.

The tree hands back indices; it never frees them. Whoever calls ``insert`` or ``evict``
returns the listed indices to the allocators.

>>> r = EvictResult(full_indices=np.array([4, 5, 6]), mamba_slots=np.array([2]))
>>> r.num_full_tokens, r.num_mamba_slots
(3, 1)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

if TYPE_CHECKING:
    from kvledger.tree.node import Node, Tier


class MatchResult(NamedTuple):
    """The cached prefix of a request.

    Region diagram for one request (``|`` = node ends, ``*`` = node holding a MAMBA state)::

        tokens:  |=======*====|====*===|~~~~~~~|=======|   (~ = FULL only on host)
                 0  device_indices     |       |       full_kv_hit_length
                         last_device_node      best_match_node
                                   <host_hit_length>

    Assumptions: the request may reuse KV only up to a node that also has a MAMBA state (the
    state after that token is what the request continues from); KV deeper than that is
    recomputed. ``mamba_branching_seqlen`` tells the scheduler where to save a new state.
    """

    device_indices: np.ndarray  # FULL device slots, root to last_device_node (read-only)
    last_device_node: Node  # deepest node with FULL and MAMBA both on device (root if none)
    best_match_node: Node  # deepest node with FULL and MAMBA each on device or host
    full_kv_hit_length: int  # tokens whose FULL KV is cached anywhere along the request
    host_hit_length: int  # tokens from last_device_node to best_match_node (need loadback)
    mamba_branching_seqlen: int | None  # FULL hit floored to the checkpoint grid, if deeper
    mamba_src_slot: int | None  # device state slot to copy into the request (never write it)

    @property
    def device_hit_length(self) -> int:
        return len(self.device_indices)


class InsertResult(NamedTuple):
    """What an insert changed and what the caller must free."""

    prefix_length: int  # tokens that were already in the tree before this insert
    duplicate_indices: np.ndarray  # caller's device slots the tree already had: free them
    mamba_existed: bool  # a state already sat at the end: the caller frees its own slot
    node: Node  # the node ending at the last inserted token (root for an empty insert)


class EvictResult(NamedTuple):
    """Indices released by an eviction: device indices from ``evict``, host from ``evict_host``."""

    full_indices: np.ndarray  # FULL token slots
    mamba_slots: np.ndarray  # MAMBA state slots

    @property
    def num_full_tokens(self) -> int:
        return len(self.full_indices)

    @property
    def num_mamba_slots(self) -> int:
        return len(self.mamba_slots)


class LockReceipt(NamedTuple):
    """Proof of one lock; ``RadixTree.unlock`` replays it exactly once.

    A FULL lock covers the node and every ancestor (nodes split in later inherit the count);
    a MAMBA lock covers only the node, and only if it had a state on that tier when locked.
    """

    receipt_id: int
    node: Node
    tier: Tier
    mamba_locked: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class TierSizes:
    """Evictable (unlocked) and protected (locked) sizes of one tier, per component.

    >>> s = TierSizes(full_evictable_tokens=96, full_protected_tokens=32,
    ...               mamba_evictable_slots=3, mamba_protected_slots=1)
    >>> s.full_tokens, s.mamba_slots
    (128, 4)
    """

    full_evictable_tokens: int  # KV tokens on nodes without a lock on this tier
    full_protected_tokens: int  # KV tokens on nodes locked on this tier
    mamba_evictable_slots: int  # states without a lock on this tier
    mamba_protected_slots: int  # states locked on this tier

    @property
    def full_tokens(self) -> int:
        return self.full_evictable_tokens + self.full_protected_tokens

    @property
    def mamba_slots(self) -> int:
        return self.mamba_evictable_slots + self.mamba_protected_slots
