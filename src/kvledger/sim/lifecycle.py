"""A request's transitions against the cache: admit, prefill a chunk, decode, finish.

Mirrors SGLang's hybrid (MambaRadixCache) request path in accounting mode:
1. admit: match the prompt (all but its last token) in the tree. KV is reusable only up to
   the deepest node with a state (`device_hit_length`); the request locks that node, takes
   its held state slots (working + track) and reserves pages for the rest of its sequence.
   With a host tier, a deeper match on host (`host_hit_length`) is loaded back once the
   request is admitted, as SGLang's scheduler does after its token-budget check
   (schedule_policy.py, PrefillAdder.add_one_req → `init_load_back`). The matched state is
   copied into the working slot (copy-on-write: the tree's slot is never written).
2. prefill chunk: allocate pages for the chunk; with extra_buffer a state checkpoint is
   tracked at the deepest grid point of the chunk (or where the tree asked for a branch
   point, `mamba_branching_seqlen`). A chunk that does not end the prompt caches the prefix
   up to that checkpoint (`cache_unfinished_req`): the track slot is donated to the tree and
   replaced by a fresh one.
3. decode: one token per step; pages as the sequence grows; a checkpoint every
   `--mamba-track-interval` tokens.
4. finish (`cache_finished_req`): with extra_buffer only the prefix up to the last
   checkpoint is cached, with the track slot as its state; KV beyond it is freed. With
   no_buffer (page 1) the whole sequence is cached with the working slot as its state.

Units: the tree runs over page keys, so tree lengths are pages; this module converts.
"""

from __future__ import annotations

from enum import Enum

import numpy as np

from kvledger.cache.policies import CheckpointEvent, StatePolicies
from kvledger.cache.policies.admission import EngineAdmission
from kvledger.cache.policies.eviction import LruEviction
from kvledger.cache.policies.ghost import prefix_hashes
from kvledger.sim.device_cache import DeviceCache
from kvledger.sim.metrics import Counters
from kvledger.sim.running import Running
from kvledger.sim.series import Constraint
from kvledger.tree.results import LockReceipt, MatchResult
from kvledger.units import align_down, cdiv


def DEFAULT_POLICIES() -> StatePolicies:  # noqa: N802 (a factory named as the constant it makes)
    """The engine's own behaviour: SGLang's admission points and LRU state eviction."""
    return StatePolicies(admission=EngineAdmission(), eviction=LruEviction())


class CheckpointMode(Enum):
    TRACKED = "extra_buffer"  # ping-pong track slots hold grid-aligned checkpoints
    EXACT = "no_buffer"  # the working state at the cached end is the checkpoint


class Lifecycle:
    def __init__(self, *, cache: DeviceCache, counters: Counters, page_tokens: int,
                 grid_tokens: int, track_interval_tokens: int, held_slots: int,
                 mode: CheckpointMode, page_bytes: int = 0, slot_bytes: int = 0,
                 policies: StatePolicies | None = None) -> None:
        self.cache = cache
        self.policies = policies or DEFAULT_POLICIES()
        self.admission = self.policies.admission
        cache.tree.state_victims = self.policies.eviction
        self.page_bytes, self.slot_bytes = page_bytes, slot_bytes  # to time loadbacks
        self.counters = counters
        self.page = page_tokens
        self.grid = grid_tokens
        self.interval = track_interval_tokens
        self.held_slots = held_slots
        self.mode = mode
        self.tracked = mode is CheckpointMode.TRACKED
        self.reserved_pages = 0  # promised to running requests, not yet allocated
        self.own_pages = 0  # pages running requests own (allocated, not in the tree)
        self.held_slots_total = 0  # state slots running requests hold

    # ---- admission -------------------------------------------------------------------------

    def never_fits(self, kv_tokens: int) -> str | None:
        pages = cdiv(kv_tokens, self.page)
        if pages > self.cache.pages.capacity:
            return f"needs {pages} token pages, the pool has {self.cache.pages.capacity}"
        if self.held_slots > self.cache.slots.capacity:
            return f"needs {self.held_slots} state slots, the pool has {self.cache.slots.capacity}"
        return None

    def try_admit(self, run: Running, *, running_full: bool) -> set[Constraint]:
        """Admit `run` (and return an empty set) or return every ledger that is short.

        Pages are checked against the device hit alone: if a host hit cannot be loaded back
        the request recomputes it, and if it can, the pages it takes were counted as needed.
        """
        page, tree = self.page, self.cache.tree
        matchable = (run.prompt_tokens - 1) // page
        match = self.cache.match(run.seq_keys[:matchable])
        device_pages = match.device_hit_length
        receipt = tree.lock(match.last_device_node) if device_pages else None
        # A host hit's copies stay put while state slots are made room for (under write_back
        # that backs states up, which may evict host LRU entries).
        host_guard = tree.lock_host(match.best_match_node) if match.host_hit_length else None
        need_pages = cdiv(run.kv_total_tokens, page) - device_pages
        short: set[Constraint] = set()
        if running_full:
            short.add(Constraint.RUNNING)
        if need_pages > self.cache.available_pages - self.reserved_pages:
            short.add(Constraint.TOKENS)
        if self.held_slots > self.cache.available_slots:
            short.add(Constraint.STATE)
        if short:
            for held in (receipt, host_guard):
                if held is not None:
                    tree.unlock(held)
            return short
        slots = self.cache.alloc_slots(self.held_slots)
        assert slots is not None, "state slots vanished between check and commit"
        if host_guard is not None:
            match, receipt = self._load_back(match, receipt)
            tree.unlock(host_guard)
        usable_pages = match.device_hit_length
        if usable_pages:
            self.cache.reuse(match.last_device_node)
        need_pages -= usable_pages - device_pages
        run.slots = slots.tolist()
        self.held_slots_total += self.held_slots
        run.receipt = receipt
        run.tree_page_ids = match.device_indices
        run.covered_tokens = usable_pages * page
        run.computed_tokens = usable_pages * page
        hashes = prefix_hashes(run.seq_keys) if self.policies.needs_hashes else None
        ticket = self.admission.ticket(
            keys=run.seq_keys, prompt_pages=matchable, usable_pages=usable_pages,
            tree_branch_pages=match.mamba_branching_seqlen, grid_pages=self.grid // page,
            hashes=hashes)
        run.ticket = ticket
        if ticket.branch_pages is not None:
            run.branching_tokens = ticket.branch_pages * page
        self.policies.eviction.observe(hashes, matchable, usable_pages)
        run.reserved_pages = need_pages
        self.reserved_pages += need_pages
        run.hit_tokens = match.full_kv_hit_length * page
        run.usable_hit_tokens = usable_pages * page
        c = self.counters
        c.admitted += 1
        c.prompt_tokens += run.prompt_tokens
        c.hit_tokens += run.hit_tokens
        c.usable_hit_tokens += run.usable_hit_tokens
        return short

    def _load_back(self, match: MatchResult,
                   receipt: LockReceipt | None) -> tuple[MatchResult, LockReceipt | None]:
        """Load the host part of `match` back and move the request's lock to the new end."""
        loaded = self.cache.loadback(match)
        if loaded.device_hit_length == match.device_hit_length:
            return match, receipt  # no room: the request recomputes from its device hit
        gained = loaded.device_hit_length - match.device_hit_length
        self.counters.loadback_bytes += gained * self.page_bytes + self.slot_bytes
        tree = self.cache.tree
        moved = tree.lock(loaded.last_device_node)
        if receipt is not None:
            tree.unlock(receipt)
        return loaded, moved

    # ---- prefill and decode ----------------------------------------------------------------

    def prefill(self, run: Running, budget_tokens: int) -> int:
        """Run one chunk of at most `budget_tokens`; return the tokens computed."""
        start, prompt = run.computed_tokens, run.prompt_tokens
        end = min(prompt, start + budget_tokens)
        if end < prompt:
            end = align_down(end, self.page)  # SGLang cuts a chunk to whole pages
            if end <= start:
                return 0
        self._grow(run, end)
        branch = run.branching_tokens
        if branch is not None and start < branch <= end:
            run.last_track_tokens = branch
            run.branching_tokens = None
        elif self.tracked and end - start >= self.grid:
            run.last_track_tokens = align_down(end, self.grid)
        run.computed_tokens = end
        self.counters.prefill_tokens += end - start
        if end < prompt:
            cached = run.last_track_tokens if self.tracked else end
            if self._admit(CheckpointEvent.CHUNK_END, run, cached):
                self._cache_prefix(run, cached, slot_index=None)
        elif self.tracked and run.last_track_tokens is not None and self.admission.admit(
                CheckpointEvent.PREFILL_END, run.ticket, run.last_track_tokens // self.page):
            self._cache_prefix(run, run.last_track_tokens, slot_index=None)
        if end == prompt and run.output_tokens:
            run.generated_tokens = 1  # the first token is sampled by the prefill pass
            self.counters.decode_tokens += 1
        return end - start

    def decode(self, run: Running, steps: int) -> None:
        """`steps` decode steps, each feeding the last sampled token (its KV is written) and
        sampling the next; the caller counts the decoded tokens (hot path)."""
        before = run.computed_tokens + run.generated_tokens - 1  # kv_tokens, generated ≥ 1
        after = before + steps
        run.generated_tokens += steps
        if after > run.covered_tokens:
            self._grow(run, after)
        if self.tracked and after // self.interval > before // self.interval:
            run.last_track_tokens = after // self.interval * self.interval

    def _grow(self, run: Running, tokens: int) -> None:
        need = cdiv(tokens, self.page) - run.held_pages
        if need <= 0:
            return
        assert need <= run.reserved_pages, f"request {run.request.rid} outgrew its reservation"
        pages = self.cache.alloc_pages(need)
        assert pages is not None, "reserved pages could not be allocated: reservation broken"
        run.add_own(pages)
        run.covered_tokens = run.held_pages * self.page
        run.reserved_pages -= need
        self.reserved_pages -= need
        self.own_pages += need

    # ---- caching and finishing -------------------------------------------------------------

    def _cache_prefix(self, run: Running, cached_tokens: int | None, *, slot_index: int | None) -> None:
        """Insert the sequence's first `cached_tokens` with a state; `slot_index` names the
        request slot donated as that state, or None to take a fresh slot for the tree."""
        if cached_tokens is None or cached_tokens // self.page <= run.tree_pages:
            return
        if slot_index is None:
            fresh = self.cache.alloc_slots(1)
            if fresh is None:
                self.counters.checkpoints_skipped += 1
                return
            if self.tracked:
                # donate the track slot, keep the fresh one as the new track slot
                slot, run.slots[1] = run.slots[1], int(fresh[0])
            else:
                slot = int(fresh[0])  # a copy of the working state
        else:
            slot = run.slots.pop(slot_index)
            self.held_slots_total -= 1
        num_pages = cached_tokens // self.page
        keys = run.seq_keys[:num_pages]
        result = self.cache.insert(keys, run.page_ids(num_pages), slot)
        if result.mamba_existed:
            self.counters.checkpoints_existing += 1
        else:
            self.counters.checkpoints_saved += 1
        own = run.take_own()
        handed = num_pages - run.tree_pages  # own pages now held (or freed) by the tree
        run.own_pages = [own[handed:]]
        run.num_own_pages -= handed
        self.own_pages -= handed
        if run.last_track_tokens is not None and run.last_track_tokens <= cached_tokens:
            run.last_track_tokens = None
        if slot_index is not None:
            return  # finishing: the caller drops the rest; no need to re-pin
        rematch = self.cache.tree.match_prefix(keys)
        assert rematch.device_hit_length == num_pages, "inserted prefix is not matchable"
        receipt = self.cache.tree.lock(rematch.last_device_node)
        if run.receipt is not None:
            self.cache.tree.unlock(run.receipt)
        run.receipt = receipt
        run.tree_page_ids = rematch.device_indices

    def _admit(self, event: CheckpointEvent, run: Running, cached_tokens: int | None) -> bool:
        """Ask the admission policy; a declined checkpoint that would have cached new pages
        is counted (`checkpoints_declined`)."""
        if cached_tokens is None or cached_tokens // self.page <= run.tree_pages:
            return False  # nothing new to cache either way
        if self.admission.admit(event, run.ticket, cached_tokens // self.page):
            return True
        self.counters.checkpoints_declined += 1
        return False

    def finish(self, run: Running) -> None:
        if self.tracked:
            if self._admit(CheckpointEvent.FINISH, run, run.last_track_tokens):
                self._cache_prefix(run, run.last_track_tokens, slot_index=1)
        else:
            cached = align_down(run.kv_tokens, self.page)
            if self._admit(CheckpointEvent.FINISH, run, cached):
                self._cache_prefix(run, cached, slot_index=0)
        self.cache.free_pages(run.take_own())
        self.own_pages -= run.num_own_pages
        run.own_pages, run.num_own_pages = [], 0
        self.cache.free_slots(np.array(run.slots, dtype=np.int64))
        self.held_slots_total -= len(run.slots)
        run.slots = []
        if run.receipt is not None:
            self.cache.tree.unlock(run.receipt)
            run.receipt = None
        assert run.reserved_pages == 0, f"request {run.request.rid} finished with pages reserved"
        self.counters.finished += 1
