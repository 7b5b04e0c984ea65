"""Unwinding an admission that raised: nothing stays half-admitted.

`HybridCache.admit` takes several things before the request joins the running set: the
admission locks (the matched device node; for a host hit also the device prefix the
loadback stitches onto and a host lock on the copies it reads), a request row, the held
state slots, the request's own lock on its hit and a page reservation. Any of the steps
after the first lock can raise: a loadback copy or its commit (`kvledger.host.loadback`), a
backup the hit starts (write_through_selective), a write_back eviction making room, a state
copy, or the user's KeyboardInterrupt. The host tier cleans up its own transfer first (its
locks, pages, slots and in-flight counters); `abandon_admission` then gives back what the
facade took, so `check_integrity` holds and the next admission starts clean, and the error
propagates.

What is not undone is what stays true: a loadback that completed leaves the prefix on device
in the tree (cached, unlocked, evictable like any other), evictions made for room stay
made, and the counters of what moved (loadbacks, evictions) and what state admission was
told (its ticket) count what happened.

>>> import numpy as np
>>> from kvledger.cache.hybrid import HybridCache
>>> from kvledger.cache.page_rows import PageRows
>>> from kvledger.cache.seq import CheckpointMode
>>> from kvledger.pools.ids import StateSlotAllocator
>>> from kvledger.tree import RadixTree
>>> cache = HybridCache(rows=PageRows(num_pages=8, page_tokens=16, num_rows=2),
...                     tree=RadixTree(page_size=1, mamba_chunk_tokens=1),
...                     states=StateSlotAllocator(num_slots=6), held_slots_per_request=3,
...                     mode=CheckpointMode.TRACKED)
>>> def interrupted(*args, **kwargs):
...     raise ValueError("a policy bug")
>>> cache.policies.admission.ticket = interrupted  # the last step before the request runs
>>> cache.admit(np.arange(3), prompt_tokens=40, final_tokens=41)
Traceback (most recent call last):
...
ValueError: a policy bug
>>> cache.states.num_free, cache.rows.num_free_rows, cache.reserved_pages, cache.running
(6, 2, 0, {})
>>> cache.check_integrity()
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kvledger.cache.seq import CacheSeq
from kvledger.tree import LockReceipt

if TYPE_CHECKING:
    from kvledger.cache.hybrid import HybridCache


@dataclass(slots=True)
class Admission:
    """What an admission in progress holds, as it takes it."""

    guards: list[LockReceipt] = field(default_factory=list)  # admission locks still held
    seq: CacheSeq | None = None  # the request, once it has a row


def abandon_admission(cache: HybridCache, taken: Admission) -> None:
    """Give back everything `taken` holds (locks, row, slots, reservation); a request that
    already joined the running set is left to its owner (it is consistent)."""
    seq = taken.seq
    if seq is not None and cache.running.get(seq.row) is seq:
        return
    tree = cache.tree
    while taken.guards:
        tree.unlock(taken.guards.pop())
    if seq is None:
        return
    if seq.receipt is not None:
        tree.unlock(seq.receipt)
        seq.receipt = None
    if seq.slots:
        cache.states.free(seq.slots)
        cache.held_slots_total -= len(seq.slots)
        seq.slots = []
    cache.reserved_pages -= seq.reserved_pages
    seq.reserved_pages = 0
    cache.rows.free_row(seq.row)
    taken.seq = None
