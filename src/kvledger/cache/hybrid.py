"""HybridCache: the facade where device pools, the radix tree and the host tier meet.

The tree stores indices, pools own memory, the host tier copies bytes; only this facade
moves indices between them. It knows token ids and slots, never the model. A request's life
(page P, checkpoint grid G = ``tree.mamba_checkpoint_tokens``, a multiple of P)::

    admit     match prompt[:-1]; load back host-only KV (root first) and the best node's
              state; lock the best node; copy its state into the request's slot (COW)
    extend    slots for the next chunk, evicting unlocked tree entries when short; save the
              state at the branching point and at the chunk's last grid point
    commit    insert the prefix up to that grid point (an unfinished request), lock it
    release   insert up to the last grid point the request reached, free the rest, unlock

Capacity is check-then-commit, so a running request never waits for memory. Pages: ``admit``
reserves every page the request can still need (KV of ``prompt + max_new − 1`` tokens from
its device hit on) out of free + evictable − reserved pages. State slots: a running request
holds at most ``STATE_SLOTS_PER_REQUEST`` = 4 that cannot be evicted (working, track,
branch, and the tree state its lock pins); every other state is free or evictable, so
admitting while ``4 × running ≤ slots`` guarantees every later slot allocation (SGLang's
planning ratio is the same idea: 3 + 2 slots per request with extra_buffer). ``admit``
returns None when a request does not fit now. A page holds whole kpool groups, so a cached
prefix never leaves an open group in the compress tail.

>>> from kvledger.engine.config import TinyConfig
>>> from kvledger.engine.memory import PoolSizes, build_device_pools
>>> pools = build_device_pools(TinyConfig(), PoolSizes(num_pages=8, page_tokens=16))
>>> cache = HybridCache(kv=pools.kv, token_allocator=pools.token_allocator,
...                     state_allocator=pools.state_allocator,
...                     tree=RadixTree(page_size=16, mamba_chunk_tokens=16))
>>> prompt = np.arange(40)
>>> seq = cache.admit(prompt, final_tokens=41)           # nothing cached yet: 3 pages reserved
>>> ext = cache.extend(seq, 40)                          # the model runs the chunk here
>>> ext.checkpoints == ((32, seq.track_slot),)           # save the state after 32 tokens
True
>>> cache.commit(seq, prompt, 40, cache_unfinished=True) # tokens 0..31 and that state cached
>>> cache.release(seq, np.r_[prompt, [7]])
>>> cache.admit(prompt, final_tokens=41).computed_tokens # the next request starts at 32
32
>>> cache.check_integrity()
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch

from kvledger.cache.seq import STATE_SLOTS_PER_REQUEST, CacheSeq, CacheStats, Extension
from kvledger.host.backup import path_spans
from kvledger.host.controller import HiCacheController
from kvledger.host.device_only import DeviceOnlyTier
from kvledger.host.results import LoadStatus
from kvledger.pools.hybrid import HybridLinearKVPool
from kvledger.pools.ids import StateSlotAllocator
from kvledger.pools.paged import PagedTokenAllocator
from kvledger.tree import RadixTree
from kvledger.units import cdiv

if TYPE_CHECKING:
    from kvledger.cache.store_tier import StoreTier

_FAILED_LOADBACKS = (LoadStatus.NO_ROOM, LoadStatus.FAILED)


class HybridCache:
    def __init__(self, *, kv: HybridLinearKVPool, token_allocator: PagedTokenAllocator,
                 state_allocator: StateSlotAllocator, tree: RadixTree,
                 host: HiCacheController | None = None, store: StoreTier | None = None) -> None:
        if tree.page_size != token_allocator.page_tokens:
            raise ValueError(f"tree page {tree.page_size} != token page {token_allocator.page_tokens}")
        if kv.mamba_pool is None:
            raise ValueError("HybridCache: the pools have no state pool")
        if host is not None and (host.tree is not tree
                                 or host.device.token_allocator is not token_allocator
                                 or host.device.state_allocator is not state_allocator):
            raise ValueError("HybridCache: the host tier must share this tree and allocators")
        self.kv = kv
        self.tokens = token_allocator
        self.states = state_allocator
        self.tree = tree
        self.tier = (host if host is not None
                     else DeviceOnlyTier(tree, token_allocator, state_allocator))
        self.page = token_allocator.page_tokens
        self.grid = tree.mamba_checkpoint_tokens
        self.req_to_token = kv.req_to_token_pool
        self.reserved_pages = 0
        self.running: dict[int, CacheSeq] = {}  # row -> seq
        self.store = store  # the store tier below host (`kvledger.cache.store_tier`), if any
        self.stats = CacheStats()

    # ---- admission -------------------------------------------------------------------------

    def admit(self, prompt: np.ndarray, final_tokens: int) -> CacheSeq | None:
        """Match, reserve, load back and lock for a request that will compute KV for
        ``final_tokens`` tokens; None (nothing changed but tree recency) when it does not fit."""
        if not 1 <= len(prompt) <= final_tokens:
            raise ValueError(f"admit: need 1 ≤ prompt ({len(prompt)}) ≤ final_tokens ({final_tokens})")
        if final_tokens > self.req_to_token.max_context_tokens:
            raise ValueError(f"admit: {final_tokens} tokens exceed the request row width "
                             f"{self.req_to_token.max_context_tokens}")
        if (self.req_to_token.rows.num_free == 0
                or (len(self.running) + 1) * STATE_SLOTS_PER_REQUEST > self.states.capacity):
            return None
        if self.store is not None:
            self.store.prefetch(self, prompt)
        match = self.tree.match_prefix(prompt[: len(prompt) - 1])
        best = match.best_match_node
        on_device = [n for n, _, _ in path_spans(best) if n.full.value is not None]
        anchors = dict.fromkeys([*on_device[-1:], match.last_device_node])
        guards = [self.tree.lock(n) for n in anchors if n.parent is not None]
        if best.parent is not None and best.full.host_value is not None:
            # Making room for state slots may back states up (write_back) and evict host LRU
            # entries: pin the host copy this request is about to load back.
            guards.append(self.tree.lock_host(best))
        branch = match.mamba_branching_seqlen
        # If the loadback fails the request recomputes from its device hit: reserve for that.
        need_pages = cdiv(final_tokens, self.page) - match.device_hit_length // self.page
        if not self._fits(need_pages):
            for guard in guards:
                self.tree.unlock(guard)
            return None
        row = int(self.req_to_token.alloc(1)[0])
        seq = CacheSeq(row=row, state_slot=0, track_slot=0, branch_slot=None, branch_tokens=None,
                       track_tokens=None, computed_tokens=0, allocated_tokens=0, cached_tokens=0,
                       receipt=None, reserved_pages=need_pages)
        self.reserved_pages += need_pages
        self.running[row] = seq
        seq.state_slot = self._alloc_slot(seq)
        seq.track_slot = self._alloc_slot(seq)
        loaded = self.tier.loadback(match, request_slot=None)
        assert loaded.status is not LoadStatus.QUEUED, "the facade drives a synchronous host tier"
        self._take(seq, pages=loaded.loaded_tokens // self.page)
        node = loaded.node
        if node.parent is not None:
            seq.receipt = self.tree.lock(node)
            self.kv.mamba_pool.copy_slot(int(node.mamba.value), seq.state_slot)
            self.tier.on_hit(node)
            if self.store is not None:
                self.store.on_hit(node)
        for guard in guards:
            self.tree.unlock(guard)
        hit = loaded.hit_tokens
        seq.computed_tokens = seq.allocated_tokens = seq.cached_tokens = hit
        if hit:
            self.req_to_token.write_extend(rows=[row], prefix_lens=[0], seq_lens=[hit],
                                           token_locs=np.array(loaded.device_indices))
        if branch is not None and branch > hit:
            seq.branch_tokens, seq.branch_slot = branch, self._alloc_slot(seq)
        self.stats.admitted += 1
        self.stats.prefix_hit_tokens += hit
        self.stats.loadback_tokens += loaded.loaded_tokens
        self.stats.loadback_states += int(loaded.loaded_state)
        self.stats.loadback_failures += int(loaded.status in _FAILED_LOADBACKS)
        return seq

    def _fits(self, pages: int) -> bool:
        evictable = self.tree.sizes().full_evictable_tokens // self.page
        return self.tokens.num_free_pages + evictable - self.reserved_pages >= pages

    # ---- chunks ----------------------------------------------------------------------------

    def extend(self, seq: CacheSeq, num_new_tokens: int) -> Extension:
        """Slots for positions computed .. computed+n−1 and the states to save on the way."""
        start = seq.computed_tokens
        end = start + num_new_tokens
        if seq.allocated_tokens != start:
            raise RuntimeError(f"request row {seq.row}: extend before the last chunk was committed")
        if num_new_tokens < 1 or end > self.req_to_token.max_context_tokens:
            raise ValueError(f"extend: {num_new_tokens} tokens from {start} do not fit the row")
        last = int(self.req_to_token.req_to_token[seq.row, start - 1]) if start else -1
        pages = self.tokens.pages_needed_extend([start], [end])
        self._make_room(pages=pages)
        locs = self.tokens.alloc_extend([start], [end], [last])
        if locs is None:
            raise RuntimeError("reservation accounting broken: no pages after eviction")
        self._take(seq, pages=pages)
        seq.allocated_tokens = end
        self.req_to_token.write_extend(rows=[seq.row], prefix_lens=[start], seq_lens=[end],
                                       token_locs=locs)
        checkpoints = []
        if seq.branch_tokens is not None and start < seq.branch_tokens <= end:
            checkpoints.append((seq.branch_tokens, seq.branch_slot))
        grid_end = end // self.grid * self.grid
        if grid_end > start and grid_end != seq.branch_tokens:
            checkpoints.append((grid_end, seq.track_slot))
            seq.track_tokens = grid_end
        row = self.req_to_token.read(seq.row, end).to(torch.int64)
        return Extension(token_locs=row, checkpoints=tuple(checkpoints))

    def commit(self, seq: CacheSeq, tokens: np.ndarray, num_new_tokens: int, *,
               cache_unfinished: bool) -> None:
        """The chunk ran: insert the branching state, and the prefix so far when prefilling."""
        seq.computed_tokens += num_new_tokens
        branch = seq.branch_tokens
        if branch is not None and branch <= seq.computed_tokens:
            slot, seq.branch_slot, seq.branch_tokens = seq.branch_slot, None, None
            if self._insert(seq, tokens[:branch], slot):
                self.stats.branch_states += 1
            else:
                self.states.free([slot])
        if cache_unfinished and self._insert_track(seq, tokens):
            seq.track_slot = self._alloc_slot(seq)

    def release(self, seq: CacheSeq, tokens: np.ndarray) -> None:
        """Cache the finished request's KV up to its last grid point; free everything else."""
        freed = [seq.state_slot] + ([seq.branch_slot] if seq.branch_slot is not None else [])
        if not self._insert_track(seq, tokens):
            freed.append(seq.track_slot)
        self.states.free(freed)
        own = self.req_to_token.read(seq.row, seq.allocated_tokens)[seq.cached_tokens:]
        self.tokens.free(own.numpy().astype(np.int64))
        if seq.receipt is not None:
            self.tree.unlock(seq.receipt)
        self.req_to_token.free([seq.row])
        self.reserved_pages -= seq.reserved_pages
        del self.running[seq.row]

    # ---- tree inserts ----------------------------------------------------------------------

    def _insert_track(self, seq: CacheSeq, tokens: np.ndarray) -> bool:
        """Insert up to the tracked grid point; True if the tree took the track slot."""
        length, seq.track_tokens = seq.track_tokens, None
        if length is None or length <= seq.cached_tokens:
            return False
        return self._insert(seq, tokens[:length], seq.track_slot)

    def _insert(self, seq: CacheSeq, tokens: np.ndarray, slot: int) -> bool:
        """Insert ``tokens`` with ``slot`` as their end state and move the request's lock to
        the new node; True if the tree adopted ``slot`` (else the caller still owns it)."""
        locs = self.req_to_token.read(seq.row, len(tokens)).numpy().astype(np.int64)
        result = self.tree.insert(tokens, locs, slot)
        self.tier.on_insert(result)
        if self.store is not None:
            self.store.on_insert(result.node)
        if len(result.duplicate_indices):
            self.tokens.free(result.duplicate_indices)
            shared = self.tree.path_device_indices(result.node)
            self.req_to_token.write_extend(rows=[seq.row], prefix_lens=[0],
                                           seq_lens=[len(shared)], token_locs=np.array(shared))
        self.stats.inserted_tokens += len(tokens) - result.prefix_length
        if len(tokens) > seq.cached_tokens:
            old, seq.receipt = seq.receipt, self.tree.lock(result.node)
            seq.cached_tokens = len(tokens)
            if old is not None:
                self.tree.unlock(old)
        return not result.mamba_existed

    # ---- memory ----------------------------------------------------------------------------

    def _alloc_slot(self, seq: CacheSeq) -> int:
        self._make_room(slots=1)
        slots = self.states.alloc(1)
        if slots is None:
            raise RuntimeError(f"request row {seq.row}: no state slot after eviction, although "
                               f"{STATE_SLOTS_PER_REQUEST} per running request fit")
        return int(slots[0])

    def _take(self, seq: CacheSeq, *, pages: int) -> None:
        if pages > seq.reserved_pages:
            raise RuntimeError(f"request row {seq.row} allocates beyond its reservation")
        seq.reserved_pages -= pages
        self.reserved_pages -= pages

    def _make_room(self, *, pages: int = 0, slots: int = 0) -> None:
        short_pages = pages - self.tokens.num_free_pages
        short_slots = slots - self.states.num_free
        if short_pages <= 0 and short_slots <= 0:
            return
        if self.store is not None:
            self.store.before_evict()
        freed = self.tier.evict_device(full_tokens=max(short_pages, 0) * self.page,
                                       mamba_slots=max(short_slots, 0))
        self.stats.evicted_tokens += freed.num_full_tokens
        self.stats.evicted_states += freed.num_mamba_slots
        if self.store is not None:
            self.store.after_evict(self.tree, freed.full_indices, freed.mamba_slots)

    def check_integrity(self) -> None:
        """Tree, pools and host tier consistent; every device page and state slot owned once,
        by the tree or by one running request; reservations add up."""
        self.tier.check_integrity()
        if self.store is not None:
            self.store.check_integrity()
        self.kv.check_integrity()
        self.tokens.check_integrity()
        self.states.check_integrity()
        sizes, seqs = self.tree.sizes(), self.running.values()
        laws = {
            "token pages in use = tree pages + requests' own pages": (
                self.tokens.num_pages - self.tokens.num_free_pages,
                (sizes.full_evictable_tokens + sizes.full_protected_tokens) // self.page
                + sum(cdiv(s.allocated_tokens, self.page) - s.cached_tokens // self.page
                      for s in seqs)),
            "state slots in use = tree states + requests' own slots": (
                self.states.capacity - self.states.num_free,
                sizes.mamba_evictable_slots + sizes.mamba_protected_slots
                + sum(2 + (s.branch_slot is not None) for s in seqs)),
            "reserved pages = Σ requests' reservations": (
                self.reserved_pages, sum(s.reserved_pages for s in seqs)),
        }
        if self.reserved_pages > self.tokens.num_free_pages + sizes.full_evictable_tokens // self.page:
            raise RuntimeError(f"HybridCache: {self.reserved_pages} pages reserved, only "
                               f"{self.tokens.num_free_pages} free + "
                               f"{sizes.full_evictable_tokens // self.page} evictable")
        for law, (got, want) in laws.items():
            if got != want:
                raise RuntimeError(f"HybridCache: {law} broken: {got} != {want}")
        if len(self.running) * STATE_SLOTS_PER_REQUEST > self.states.capacity:
            raise RuntimeError(f"{len(self.running)} running requests may pin more state slots "
                               f"than the pool's {self.states.capacity}")
