"""A running request's prefix entering the tree: `HybridCache.commit`'s and `release`'s insert.

SGLang's cache_unfinished_req (after a prefill forward that goes on running) and
cache_finished_req (at release): the prefix up to the last tracked point goes to the tree
with its state, unless the state admission declines that point.

* Tracked mode (``extra_buffer``): a forward's track slot is donated to the tree and a
  fresh slot takes its place in the request; at release the tree takes the slot itself.
* Copy mode: the working state is copied into a fresh slot.
* No slot free for the copy: the checkpoint is skipped, and the prefix stays uncached.

Pages the tree already had (another request inserted them) are freed, and the request
adopts the tree's; a state the tree already had sends the slot back. The host tier's and
the store tier's insert hooks run last, when the tree, rows and totals agree, because they
may raise.

Worked example: `kvledger.cache.hybrid`'s (commit caches tokens 0..31 with the state the
forward tracked after 32 tokens; release finds nothing deeper to cache).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from kvledger.cache.policies import CheckpointEvent
from kvledger.cache.seq import CacheSeq

if TYPE_CHECKING:
    from kvledger.cache.hybrid import HybridCache


def cache_prefix(cache: HybridCache, seq: CacheSeq, keys: np.ndarray, *, finishing: bool) -> None:
    """Cache `seq`'s prefix up to its last tracked point (the whole computed pages in
    copy mode), if the state admission takes it; `finishing`: the request's release."""
    if cache.tracked:
        length, index = seq.last_track_tokens, seq.last_track_index
        if length is None:
            return
    else:
        length, index = seq.computed_tokens // cache.page * cache.page, 0
    if length <= seq.cached_tokens:
        seq.last_track_tokens = None
        return
    if seq.ticket is not None:
        event = (CheckpointEvent.FINISH if finishing
                 else CheckpointEvent.CHUNK_END if seq.computed_tokens < seq.prompt_tokens
                 else CheckpointEvent.PREFILL_END)
        if not cache.policies.admission.admit(event, seq.ticket, length // cache.page):
            # declined: the tracked state stays the request's latest, for a later point
            cache.stats.checkpoints_declined += 1
            return
    seq.last_track_tokens = None
    slot = None
    if cache.states is not None:
        if finishing:
            slot = seq.slots.pop(index)  # the tree takes the slot itself
            cache.held_slots_total -= 1
        else:
            fresh = cache.alloc_slots(1)
            if fresh is None:
                cache.stats.checkpoints_skipped += 1
                return
            if cache.tracked:  # donate the track slot, keep the fresh one in its place
                slot, seq.slots[index] = seq.slots[index], fresh[0]
            else:  # a copy of the working state
                slot = fresh[0]
                cache.rows.copy_state(seq.slots[0], slot)
    _insert(cache, seq, keys, length, slot, relock=not finishing)


def _insert(cache: HybridCache, seq: CacheSeq, keys: np.ndarray, length: int,
            slot: int | None, *, relock: bool) -> None:
    rows, tree = cache.rows, cache.tree
    values = rows.values(seq, length)
    # The walk starts at the request's locked node: the prefix above it is the tree's
    # own KV (matched or inserted by this request), so only the new suffix is compared.
    held = seq.receipt.node if seq.receipt is not None else None
    result = tree.insert(keys[: length // cache.unit], values, slot, below=held)
    duplicates = result.duplicate_indices
    if len(duplicates):
        rows.free_values(duplicates)
    if slot is not None:
        if result.mamba_existed:
            cache.states.free([slot])
            cache.stats.checkpoints_existing += 1
        else:
            cache.stats.checkpoints_saved += 1
            cache.stats.branch_states += int(seq.last_track_branch)
    if len(duplicates):
        rows.adopt(seq, length, tree.path_device_indices(result.node), changed=True)
    else:
        rows.adopt(seq, length, values, changed=False)
    cache.own_pages -= length // cache.page - seq.cached_tokens // cache.page
    cache.stats.inserted_tokens += length - result.prefix_length * cache.unit
    seq.cached_tokens = length
    if relock:
        old, seq.receipt = seq.receipt, tree.lock(result.node)
        if old is not None:
            tree.unlock(old)
    # Last: the host write policy's backups, then the store's write-through, may raise (a
    # failed copy is swallowed, anything else propagates); by now the tree, the rows and
    # the totals agree.
    cache.tier.on_insert(result)
    cache.store.on_insert(result.node)
