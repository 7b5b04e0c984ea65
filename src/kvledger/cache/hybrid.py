"""HybridCache: the one facade where device memory, the radix tree and the host tier meet.

The tree stores indices, the rows own request memory, the host tier copies bytes; only this
facade moves indices between them. Two modes run this same code, differing only in the
rows object: real bytes (`TokenRows`: torch pools, the tree keys tokens; the reference
engine and `kvledger verify`) and accounting (`PageRows`: numpy page ids, the tree keys whole
pages; the simulator, no torch). All lengths here are tokens; ``unit`` converts tree lengths.
Below the host tier a store tier (`kvledger.cache.store_tier.StoreTier`, in either mode) is
told of every insert, hit and eviction, and before matching may hand back a prefix it read,
which enters through `adopt_restored` as a device hit.

A request's life, as SGLang's MambaRadixCache and scheduler run it (page P, checkpoint grid
G = lcm(linear chunk, P), decode track interval I)::

    admit    match prompt[:-1]; lock the last device node; load a host hit back; reserve the
             pages of the rest of the sequence; take the plan's held slots; copy the matched
             state into the working slot (copy-on-write)
    extend   slots for the next chunk; at most one checkpoint per forward
             (schedule_batch.py, _mamba_radix_cache_v2_req_prepare_for_extend): the branching
             point when the chunk reaches it, else the deepest grid point when the chunk
             spans ≥ G tokens; in decode, every I tokens (_mamba_check_track_boundary)
    commit   after a prefill forward, cache the prefix up to the tracked point
             (cache_unfinished_req: the track state goes to the tree, a fresh slot replaces it)
    release  cache up to the last tracked point with that track slot (cache_finished_req);
             free the rest, unlock

State policies (`kvledger.cache.policies`, the engine's by default): admission names each
request's branch point at ``admit`` and is asked before every state enters the tree (each
prefill forward's insert and the finish); eviction orders the tree's states
(``tree.state_victims``). A declined checkpoint caches nothing; no policy changes a value.

Capacity is check-then-commit. ``admit`` answers a `Shortfall` (nothing changed but tree
recency) when request rows, pages (free + evictable − reserved) or state slots (free +
evictable) are short, so a request waits instead of failing later; once admitted it never
waits: its pages are reserved and its slots are held.

Faults: whatever a step raises (a loadback or backup copy, its commit, a state copy,
KeyboardInterrupt included), the cache stays consistent and the error propagates. ``admit``
gives back all it took (`kvledger.cache.unwind`), ``release`` still releases, ``commit`` and
``extend`` leave the request running; the host tier frees its transfer's allocations first.

>>> from kvledger.cache.page_rows import PageRows
>>> from kvledger.pools.ids import StateSlotAllocator
>>> from kvledger.tree import RadixTree
>>> rows = PageRows(num_pages=8, page_tokens=16, num_rows=2)
>>> tree = RadixTree(page_size=1, mamba_chunk_tokens=1)        # grid: one 16-token page
>>> cache = HybridCache(rows=rows, tree=tree, states=StateSlotAllocator(num_slots=6),
...                     held_slots_per_request=3, mode=CheckpointMode.TRACKED)
>>> keys = np.arange(3)                                    # page keys of a 41-token sequence
>>> seq = cache.admit(keys, prompt_tokens=40, final_tokens=41)  # 3 pages reserved, 3 slots held
>>> cache.extend(seq, 40).checkpoints == ((32, seq.slots[1]),)  # save the state after 32
True
>>> cache.commit(seq, keys, 40, cache_unfinished=True)          # tokens 0..31 and that state
>>> cache.release(seq, keys)
>>> cache.admit(keys, prompt_tokens=40, final_tokens=41).usable_hit_tokens
32
>>> cache.check_integrity()
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from kvledger.cache.admission import admit_request, announce_request
from kvledger.cache.adoption import adopt_restored
from kvledger.cache.insertion import cache_prefix
from kvledger.cache.integrity import check_ownership
from kvledger.cache.policies import StatePolicies
from kvledger.cache.policies.choice import engine_policies
from kvledger.cache.rows import Rows
from kvledger.cache.seq import CacheSeq, CacheStats, CheckpointMode, Extension, Shortfall
from kvledger.cache.store_tier import NoStoreTier, StoreTier
from kvledger.cache.tier import HostTier, NoHostTier
from kvledger.cache.unwind import Admission, abandon_admission
from kvledger.core.units import cdiv
from kvledger.pools.ids import StateSlotAllocator
from kvledger.tree import MatchResult, RadixTree


class HybridCache:
    def __init__(self, *, rows: Rows, tree: RadixTree, states: StateSlotAllocator | None,
                 held_slots_per_request: int, mode: CheckpointMode,
                 track_interval_tokens: int | None = None, host: HostTier | None = None,
                 store: StoreTier | None = None,
                 policies: StatePolicies | None = None) -> None:
        page, unit = rows.page_tokens, rows.unit_tokens
        if tree.page_size * unit != page:
            raise ValueError(f"tree page {tree.page_size} × {unit} tokens per key != page {page}")
        if (mode is CheckpointMode.NONE) != (states is None):
            raise ValueError(f"HybridCache: mode {mode.value} and a state allocator "
                             "go together (a dense model has neither)")
        least = {CheckpointMode.TRACKED: 2, CheckpointMode.EXACT: 1, CheckpointMode.NONE: 0}[mode]
        if held_slots_per_request < least or (mode is CheckpointMode.NONE and held_slots_per_request):
            raise ValueError(f"held_slots_per_request {held_slots_per_request}: mode "
                             f"{mode.value} holds {least}" + ("" if least == 0 else " or more"))
        if host is not None and not host.serves(tree, rows.allocator, states):
            raise ValueError("HybridCache: the host tier must share this tree and allocators")
        self.store: StoreTier = store if store is not None else NoStoreTier()
        if why := self.store.fits(page_tokens=page, unit_tokens=unit,
                                  writes_rows=rows.writes_rows, has_states=states is not None):
            raise ValueError(f"HybridCache: {why}")
        self.rows, self.tree, self.states, self.mode = rows, tree, states, mode
        # state admission and eviction (`kvledger.cache.policies`); default: the engine's
        self.policies = policies or engine_policies()
        tree.state_victims = self.policies.eviction
        self.page, self.unit = page, unit
        self.units_per_page = page // unit
        self.grid = tree.mamba_checkpoint_tokens * unit
        self.interval = track_interval_tokens or self.grid
        if self.interval % page:
            raise ValueError(f"track interval {self.interval}: not a multiple of the {page}-token page")
        self.held_slots = held_slots_per_request
        self.writes_rows = rows.writes_rows
        self.tracked = mode is CheckpointMode.TRACKED
        self.track_slots = held_slots_per_request - 1 if self.tracked else 0
        self.tier: HostTier = host if host is not None else NoHostTier(tree, rows.allocator, states)
        self.reserved_pages = 0  # promised to running requests, not yet allocated
        self.own_pages = 0  # pages running requests own (allocated, not the tree's)
        self.held_slots_total = 0  # state slots running requests hold
        self.running: dict[int, CacheSeq] = {}  # row -> seq
        self.stats = CacheStats()

    # ---- capacity ----------------------------------------------------------------------------

    def available_pages(self) -> int:
        """Free pages plus pages eviction could free (unlocked tree entries)."""
        return self.rows.num_free_pages + self.tree.sizes().full_evictable_tokens // self.units_per_page

    def available_slots(self) -> int:
        if self.states is None:
            return 0
        return self.states.num_free + self.tree.sizes().mamba_evictable_slots

    def never_fits(self, final_tokens: int) -> str | None:
        """Why a request computing KV for `final_tokens` could not run even alone, if so."""
        pages, capacity = cdiv(final_tokens, self.page), self.rows.pages.capacity
        if pages > capacity:
            return f"needs {pages} token pages, the pool has {capacity}"
        if self.states is not None and self.held_slots > self.states.capacity:
            return f"needs {self.held_slots} state slots, the pool has {self.states.capacity}"
        return None

    # ---- admission ---------------------------------------------------------------------------

    def admit(self, keys: np.ndarray, *, prompt_tokens: int,
              final_tokens: int) -> CacheSeq | Shortfall:
        """Match, reserve, hold slots, load back and lock for a request of `prompt_tokens`
        that will compute KV for `final_tokens` positions; `keys` are the tree keys of its
        sequence (token ids, or page keys). A `Shortfall` when it does not fit now (true where a
        ledger is short; nothing changed but tree recency)."""
        if not 1 <= prompt_tokens <= final_tokens:
            raise ValueError(f"admit: need 1 ≤ prompt ({prompt_tokens}) ≤ final_tokens ({final_tokens})")
        width = self.rows.max_context_tokens
        if width is not None and final_tokens > width:
            raise ValueError(f"admit: {final_tokens} tokens exceed the request row width {width}")
        taken = Admission()
        try:
            return admit_request(self, keys, prompt_tokens, final_tokens, taken)
        except BaseException:  # KeyboardInterrupt included: nothing may stay half-admitted
            abandon_admission(self, taken)
            raise

    def announce(self, keys: np.ndarray, *, prompt_tokens: int) -> None:
        """A request joined the driver's waiting queue (policies that read it see it; it
        leaves the queue when `admit` takes it)."""
        announce_request(self, keys, prompt_tokens)

    # ---- chunks and decode -------------------------------------------------------------------

    def extend(self, seq: CacheSeq, num_new_tokens: int) -> Extension:
        """Slots for positions computed .. computed+n−1 and the state to save on the way."""
        start = seq.computed_tokens
        end = start + num_new_tokens
        if seq.allocated_tokens != start:
            raise RuntimeError(f"request row {seq.row}: extend before the last chunk was committed")
        if num_new_tokens < 1 or end > seq.final_tokens:
            raise ValueError(f"extend: {num_new_tokens} tokens from {start} pass the request's "
                             f"{seq.final_tokens} positions")
        self._grow(seq, end)
        seq.allocated_tokens = end
        if not self.tracked:
            return Extension(checkpoints=())
        if start < seq.prompt_tokens:
            branch = seq.branch_tokens
            if branch is not None and start < branch <= end:
                later, seq.then_branch_tokens = seq.then_branch_tokens, None
                seq.branch_tokens = later
                if later is not None and later <= end:  # both in this chunk: the deeper
                    seq.branch_tokens, branch = None, later
                return Extension(checkpoints=((branch, self._track(seq, branch, branch=True)),))
            if num_new_tokens >= self.grid:  # SGLang: extend length ≥ mamba_cache_chunk_size
                at = end // self.grid * self.grid
            else:
                return Extension(checkpoints=())
        elif end // self.interval > start // self.interval:
            at = end // self.interval * self.interval
        else:
            return Extension(checkpoints=())
        return Extension(checkpoints=((at, self._track(seq, at)),))

    def commit(self, seq: CacheSeq, keys: np.ndarray, num_new_tokens: int, *,
               cache_unfinished: bool) -> None:
        """The forward ran; after a prefill forward cache the prefix so far. If caching
        raises (a backup the insert started), the request stays running and consistent,
        its prefix cached: the caller goes on or releases it."""
        seq.computed_tokens += num_new_tokens
        if cache_unfinished:
            cache_prefix(self, seq, keys, finishing=False)

    def decode(self, seq: CacheSeq, steps: int) -> None:
        """`steps` decode tokens at once (accounting mode's stride: extend + commit of each
        fed token, with the decode checkpoint at the last interval point crossed). Real bytes
        decode through `extend` / `commit`, one token per forward."""
        if self.writes_rows:
            raise RuntimeError("decode strides are for accounting mode; extend one token instead")
        before = seq.computed_tokens
        after = before + steps
        if after > seq.held_pages * self.page:
            self._grow(seq, after)
        seq.computed_tokens = seq.allocated_tokens = after
        if self.tracked and after // self.interval > before // self.interval:
            self._track(seq, after // self.interval * self.interval)

    def _track(self, seq: CacheSeq, at: int, *, branch: bool = False) -> int:
        index = seq.next_track
        seq.last_track_tokens, seq.last_track_index = at, index
        seq.last_track_branch = branch
        if self.track_slots == 2:
            seq.next_track = 3 - index  # ping-pong: the other slot takes the next checkpoint
        return seq.slots[index]

    def _grow(self, seq: CacheSeq, end: int) -> None:
        pages = cdiv(end, self.page) - seq.held_pages
        if pages > 0:
            if pages > seq.reserved_pages:
                raise RuntimeError(f"request row {seq.row} allocates beyond its reservation")
            short = pages - self.rows.num_free_pages
            if short > 0:
                self.evict(full_units=short * self.units_per_page)
            seq.reserved_pages -= pages
            self.reserved_pages -= pages
            seq.held_pages += pages
            self.own_pages += pages
        else:
            pages = 0
        self.rows.grow(seq, end, pages)

    # ---- caching and finishing ---------------------------------------------------------------

    def release(self, seq: CacheSeq, keys: np.ndarray) -> None:
        """Cache the finished request's prefix up to its last checkpoint; free the rest.
        Whatever caching raises (a host backup the insert started, KeyboardInterrupt
        included), the request is released before the error propagates."""
        try:
            cache_prefix(self, seq, keys, finishing=True)
        finally:
            self._free(seq)

    def _free(self, seq: CacheSeq) -> None:
        self.rows.free_own(seq)
        self.own_pages -= seq.held_pages - seq.cached_tokens // self.page
        if seq.slots:
            self.states.free(seq.slots)
            self.held_slots_total -= len(seq.slots)
            seq.slots = []
        if seq.receipt is not None:
            self.tree.unlock(seq.receipt)
            seq.receipt = None
        self.rows.free_row(seq.row)
        self.reserved_pages -= seq.reserved_pages
        seq.reserved_pages = 0
        del self.running[seq.row]

    # ---- memory ------------------------------------------------------------------------------

    def alloc_slots(self, count: int) -> list[int] | None:
        """`count` state slots, evicting tree states if the free ones are short; None (and
        nothing evicted) when even eviction could not free enough."""
        states = self.states
        short = count - states.num_free
        if short > 0:
            if short > self.tree.sizes().mamba_evictable_slots:
                return None
            self.evict(mamba_slots=short)
        got = states.alloc(count)
        return None if got is None else got.tolist()

    def evict(self, *, full_units: int = 0, mamba_slots: int = 0) -> None:
        """Free device entries through the host tier (tree units of KV, state slots),
        telling the store tier what left; counted in `stats`."""
        self.store.before_evict()
        freed = self.tier.evict_device(full_tokens=full_units, mamba_slots=mamba_slots)
        self.stats.evicted_tokens += freed.num_full_tokens * self.unit
        self.stats.evicted_states += freed.num_mamba_slots
        self.store.after_evict(self.tree, freed.full_indices, freed.mamba_slots)

    # ---- groups restored from below the host tier --------------------------------------------

    def can_adopt(self, num_pages: int) -> bool:
        """Whether `num_pages` restored pages and their state could enter the device now
        (free + evictable pages beyond what running requests reserved, and a state slot)."""
        return (self.states is not None and self.available_slots() >= 1
                and self.available_pages() - self.reserved_pages >= num_pages)

    def adopt_restored(self, match: MatchResult, keys: np.ndarray, num_pages: int,
                       write: Callable[[np.ndarray, int], None]) -> bool:
        """Cache a prefix the store tier read: `keys` (tree keys) end `num_pages` pages past
        `match`'s device hit, with the state after them. Check-then-commit: False when the
        device cannot take them now (nothing changed). Else fresh pages and a state slot
        are allocated (evicting LRU entries; the device prefix it continues stays pinned),
        `write(token_slots, state_slot)` fills them, and they enter the tree as a
        request's prefix does (duplicates freed; the host tier's insert hook runs). If
        `write` raises, the pages and the slot are freed before the error propagates."""
        return adopt_restored(self, match, keys, num_pages, write)

    def check_integrity(self) -> None:
        """Tree, rows and host tier consistent; every device page and state slot owned exactly
        once, by the tree or by one running request; reservations and totals add up."""
        seqs = list(self.running.values())
        self.tier.check_integrity([s.receipt for s in seqs if s.receipt is not None])
        self.store.check_integrity()
        self.rows.check_integrity()
        if self.states is not None:
            self.states.check_integrity()
        if self.policies.lookahead is not None:
            self.policies.lookahead.check_integrity()
        check_ownership(self)
