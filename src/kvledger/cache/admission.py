"""Admission: how a request enters the cache facade (`HybridCache.admit`'s steps).

Match ``prompt[:-1]`` (whole pages; the store tier may first restore a prefix below the host
tier), lock the last device node, check every resource at once (a request row; pages:
free + evictable − reserved; state slots: free + evictable) and answer a `Shortfall` if any
is short, having changed nothing but tree recency. Otherwise commit: a row, the held state
slots, a host loadback where the match continues on host, the request's lock on its hit,
the copy-on-write of the matched state into the working slot, and a page reservation for
the rest of the sequence (counted from the device hit, so a failed loadback recomputes
within it). State admission is then asked where this request saves its branch state.

What each step takes is written to `taken` (`kvledger.cache.unwind.Admission`) as it is
taken, so `HybridCache.admit` can give all of it back if a later step raises.

>>> import numpy as np
>>> from kvledger.cache.hybrid import HybridCache
>>> from kvledger.cache.page_rows import PageRows
>>> from kvledger.cache.seq import CheckpointMode, Shortfall
>>> from kvledger.pools.ids import StateSlotAllocator
>>> from kvledger.tree import RadixTree
>>> cache = HybridCache(rows=PageRows(num_pages=4, page_tokens=16, num_rows=2),
...                     tree=RadixTree(page_size=1, mamba_chunk_tokens=1),
...                     states=StateSlotAllocator(num_slots=6), held_slots_per_request=3,
...                     mode=CheckpointMode.TRACKED)
>>> first = cache.admit(np.arange(3), prompt_tokens=40, final_tokens=41)
>>> first.reserved_pages, cache.states.num_free
(3, 3)
>>> short = cache.admit(np.arange(10, 13), prompt_tokens=40, final_tokens=41)
>>> isinstance(short, Shortfall), short.pages, short.slots  # 1 page, 3 slots left: it waits
(True, True, False)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from kvledger.cache.policies.ghost import prefix_hashes
from kvledger.cache.seq import CacheSeq, Shortfall
from kvledger.core.units import cdiv
from kvledger.host.results import LoadStatus
from kvledger.tree import Node

if TYPE_CHECKING:
    from kvledger.cache.hybrid import HybridCache
    from kvledger.cache.unwind import Admission

_FAILED_LOADBACKS = (LoadStatus.NO_ROOM, LoadStatus.FAILED)


def admit_request(cache: HybridCache, keys: np.ndarray, prompt_tokens: int, final_tokens: int,
           taken: Admission) -> CacheSeq | Shortfall:
    """`admit`'s work; what it holds so far is in `taken`, for the unwind."""
    page, unit, tree = cache.page, cache.unit, cache.tree
    cache.store.prefetch(cache, keys[: (prompt_tokens - 1) // page * page // unit])
    match = tree.match_prefix(keys[: (prompt_tokens - 1) // page * page // unit])
    last, best = match.last_device_node, match.best_match_node
    device_tokens = match.device_hit_length * unit
    guards = taken.guards
    if last.parent is not None:
        guards.append(tree.lock(last))
    # If the loadback fails the request recomputes from its device hit: reserve for that.
    need_pages = cdiv(final_tokens, page) - device_tokens // page
    sizes = tree.sizes()
    short = Shortfall(
        rows=cache.rows.num_free_rows == 0,
        pages=need_pages > cache.rows.num_free_pages - cache.reserved_pages
        + sizes.full_evictable_tokens // cache.units_per_page,
        slots=cache.states is not None
        and cache.held_slots > cache.states.num_free + sizes.mamba_evictable_slots)
    if short:
        while guards:
            tree.unlock(guards.pop(0))
        return short
    host_hit = best is not last
    if host_hit:
        # Making room (slots, loadback pages) may evict device entries and, under
        # write_back, host ones: pin, while admitting, the device prefix the loadback
        # stitches onto and the host copies it reads.
        anchor = _deepest_on_device(best)
        if anchor is not last and anchor.parent is not None:
            guards.append(tree.lock(anchor))
        guards.append(tree.lock_host(best))
    seq = CacheSeq(row=cache.rows.alloc_row(), prompt_tokens=prompt_tokens,
                   final_tokens=final_tokens)
    taken.seq = seq
    if cache.held_slots:
        slots = cache.alloc_slots(cache.held_slots)
        assert slots is not None, "state slots vanished between check and commit"
        seq.slots = slots
        cache.held_slots_total += cache.held_slots
    node, indices = last, match.device_indices
    if host_hit:
        loaded = cache.tier.loadback(match)
        if loaded.status is LoadStatus.QUEUED:
            raise RuntimeError("the facade drives a synchronous host tier")
        node, indices = loaded.node, loaded.device_indices
        cache.stats.loadback_tokens += loaded.loaded_tokens * unit
        cache.stats.loadback_states += int(loaded.loaded_state)
        cache.stats.loadback_failures += int(loaded.status in _FAILED_LOADBACKS)
    if node.parent is not None:
        if guards and guards[0].node is node and not host_hit:
            seq.receipt = guards.pop(0)  # the admission lock becomes the request's
        else:
            seq.receipt = tree.lock(node)
        cache.tier.on_hit(node)
        cache.store.on_hit(node)
        if cache.states is not None:
            cache.rows.copy_state(int(node.mamba.value), seq.slots[0])
    while guards:  # popped as unlocked, so an unwind never unlocks one twice
        tree.unlock(guards.pop(0))
    hit = len(indices) * unit
    cache.rows.hold_prefix(seq, indices)
    seq.computed_tokens = seq.allocated_tokens = seq.cached_tokens = hit
    seq.held_pages = hit // page
    need_pages -= (hit - device_tokens) // page  # loaded-back pages came from the tier
    seq.reserved_pages = need_pages
    cache.reserved_pages += need_pages
    if cache.states is not None:
        policy_ticket(cache, seq, keys, match.mamba_branching_seqlen, prompt_tokens, hit)
    seq.hit_tokens = match.full_kv_hit_length * unit
    seq.usable_hit_tokens = hit
    cache.running[seq.row] = seq
    st = cache.stats
    st.admitted += 1
    st.prompt_tokens += prompt_tokens
    st.hit_tokens += seq.hit_tokens
    st.prefix_hit_tokens += hit
    return seq


def page_hashes(cache: HybridCache, keys: np.ndarray) -> np.ndarray:
    """One prefix hash per page of `keys`, whatever the tree keys (`ghost.prefix_hashes`)."""
    return prefix_hashes(keys)[cache.units_per_page - 1::cache.units_per_page]


def announce_request(cache: HybridCache, keys: np.ndarray, prompt_tokens: int) -> None:
    """Queue-reading policies see a waiting request's matchable pages."""
    ahead = cache.policies.lookahead
    if ahead is not None:
        ahead.join(page_hashes(cache, keys)[: (prompt_tokens - 1) // cache.page])


def policy_ticket(cache: HybridCache, seq: CacheSeq, keys: np.ndarray, branch: int | None, prompt_tokens: int,
            hit: int) -> None:
    """Ask state admission where this request saves a branch state (the tree's
    `mamba_branching_seqlen` by default) and let eviction see what it reused."""
    page, pol = cache.page, cache.policies
    hashes = None
    prompt_pages = (prompt_tokens - 1) // page
    if pol.needs_hashes:
        hashes = page_hashes(cache, keys)
    if pol.lookahead is not None:  # it is running now, no longer waiting
        pol.lookahead.leave(hashes[:prompt_pages])
    ticket = pol.admission.ticket(
        keys=keys, prompt_pages=prompt_pages, usable_pages=hit // page,
        tree_branch_pages=None if branch is None else branch * cache.unit // page,
        grid_pages=cache.grid // page, hashes=hashes)
    seq.ticket = ticket
    if cache.tracked:  # the points past the hit, shallowest first (one state per chunk)
        points = sorted(p * page for p in (ticket.branch_pages, ticket.then_pages)
                        if p is not None and p * page > hit)
        if points:
            seq.branch_tokens = points[0]
            seq.then_branch_tokens = points[1] if len(points) > 1 else None
    pol.eviction.observe(hashes, prompt_pages, hit // page)


def _deepest_on_device(node: Node) -> Node:
    """The deepest node from the root to `node` whose FULL KV is on device (root if none)."""
    path = []
    while node.parent is not None:
        path.append(node)
        node = node.parent
    deepest = node
    for n in reversed(path):
        if n.full.value is None:
            break
        deepest = n
    return deepest

