"""Sequential replay: the oracle's per-request loop over the tree and the index allocators.

Requests run one at a time in file order (no concurrency, no outputs, no chunked prefill, no
host tier), as `oracle/sglang-0.5.23-tree/README.md` replays SGLang's own trees. Per request
(prompt ``T`` of ``L`` tokens, page ``P``, ``A = floor(L/P)·P``), in pages:

1. match ``T`` (or ``T[:-1]``); the hit is ``device_hit_length`` (the deepest node holding a
   state; any cached node for a FULL-only tree); lock the matched node;
2. allocate ``ceil(L/P) − hit`` pages and 1 state slot (2 with ``--checkpoints branch`` when
   the match reports a branching length ``b`` beyond the hit); if either pool is short, one
   eviction asks for both shortfalls at once (it may free more);
3. with a branch point, insert ``T[:b]`` with its own state first (SGLang saves the state at
   ``mamba_branching_seqlen``), then ``T[:A]`` with the request's state; duplicated KV and a
   state the tree already holds are freed, so is the partial last page; unlock.

The tree's key is a run of pages (`kvledger.sequential.runs`: a whole 512-token block
unless some prompt of the trace ends inside it) and the page pool hands out one id per run
(`kvledger.pools.runs`), so a page-1 replay walks one key where a token tree walks up to 512,
and lengths are converted back to tokens through each prompt's run ends. A branching replay
keys single pages, since SGLang's checkpoint grid counts pages.

>>> from kvledger.sim.workload import Request
>>> reqs = [Request(rid=i, arrival_ms=0.0, segment_ids=(1, 2 + i), segment_tokens=(512, 300),
...                 output_tokens=0) for i in range(3)]
>>> spec = ReplaySpec(page_tokens=64, pool_tokens=1 << 20, state_slots=8,
...                   checkpoints=Checkpoints.BRANCH)
>>> out = replay(reqs, spec)
>>> out.hits.tolist(), out.kv_hits.tolist(), out.counters.branching_checkpoints
([0, 0, 512], [0, 512, 512], 1)

Request 1 shares block 1 with request 0 but no state ends there: a KV-only hit of 512
tokens, reused as nothing; it saves a branching state at 512, which request 2 then reuses.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from kvledger.pools.ids import StateSlotAllocator
from kvledger.pools.runs import RunAllocator
from kvledger.sequential.runs import RunKeyer
from kvledger.sequential.spec import Checkpoints, MatchKey, ReplaySpec
from kvledger.sglang.rules import get_rules
from kvledger.sim.workload import Request
from kvledger.tree import RadixTree, TreeRules

Progress = Callable[[int, int], None]  # (requests done, requests total)
EMPTY = np.zeros(0, dtype=np.int64)


@dataclass(slots=True)
class Counters:
    """Event counts of one replay, in tokens and states (the oracle's summary fields)."""

    evict_calls: int = 0
    evicted_tokens: int = 0
    evicted_states: int = 0
    branching_checkpoints: int = 0
    state_already_present: int = 0  # inserts whose end node already held a state


@dataclass(frozen=True, slots=True)
class ReplayOutput:
    spec: ReplaySpec
    prompt_tokens: np.ndarray  # int64 per request
    hits: np.ndarray  # int32 per request: tokens reused from device (device_prefix_len)
    kv_hits: np.ndarray  # int32 per request: longest KV-only match (full_kv_hit_length)
    counters: Counters
    final_cached_tokens: int
    final_cached_states: int


class ReplayError(ValueError):
    """A request that cannot run even with everything unlocked evicted."""


class _Pools:
    """The page-run and state allocators with the tree that holds part of them."""

    def __init__(self, spec: ReplaySpec, tree: RadixTree, counters: Counters,
                 max_run_pages: int) -> None:
        self.page = spec.page_tokens
        self.max_run_pages = max_run_pages
        self.tree = tree
        self.counters = counters
        # Every run id the replay frees comes from the tree (no slot is held by two nodes,
        # RadixTree.check_integrity) or from one allocation: no repeats to search for.
        self.runs = RunAllocator(capacity_pages=spec.pool_pages)
        self.states = StateSlotAllocator(num_slots=spec.state_slots or 0)

    def take(self, rid: int, num_pages: int, run_pages: np.ndarray,
             num_states: int) -> tuple[np.ndarray, np.ndarray]:
        """Ids for the new runs (``num_pages`` counts a partial last page too, which is never
        cached: it only has to fit) and ``num_states`` state slots, evicting for both."""
        short_pages = num_pages - self.runs.num_free_pages
        short_states = num_states - self.states.num_free
        if short_pages > 0 or short_states > 0:
            self._evict(short_pages, short_states)
        ids = self.runs.alloc(run_pages) if num_pages <= self.runs.num_free_pages else None
        if ids is None or num_states > self.states.num_free:
            page = self.page
            raise ReplayError(
                f"request {rid}: needs {num_pages * page:,} more KV tokens and {num_states} "
                f"state slot(s); {self.runs.num_free_pages * page:,} tokens and "
                f"{self.states.num_free} slot(s) are free after evicting everything unlocked "
                "(the KV pool is too small for this prompt)")
        return ids, self.states.alloc(num_states) if num_states else EMPTY

    def _evict(self, short_pages: int, short_states: int) -> None:
        """One eviction asking for both shortfalls, as SGLang's does: least recently used
        leaves until ``short_pages`` pages are free (a leaf's runs weigh their pages), then
        the states still short.

        The tree counts runs, not pages. A run holds at most ``m = max_run_pages`` pages, so
        asking for ``ceil(r / m)`` runs while ``r`` pages are still short stops no later than
        SGLang would: before that call's last leaf fewer than ``ceil(r / m)`` runs, so fewer
        than ``r`` pages, had gone. The calls repeat until the pages are free; together they
        take the leaves one ``evict(full_tokens=short_pages)`` over pages takes."""
        tree, c, most = self.tree, self.counters, self.max_run_pages
        freed_pages = freed_states = 0
        while freed_pages < short_pages:
            freed = tree.evict(full_tokens=-(-(short_pages - freed_pages) // most))
            if not freed.full_indices.size:
                break
            freed_pages += self.runs.free(freed.full_indices)
            freed_states += self._free_states(freed.mamba_slots)
        if short_states > freed_states:
            freed = tree.evict(mamba_slots=short_states - freed_states)
            freed_pages += self.runs.free(freed.full_indices)
            freed_states += self._free_states(freed.mamba_slots)
        c.evict_calls += 1
        c.evicted_tokens += freed_pages * self.page
        c.evicted_states += freed_states

    def _free_states(self, slots: np.ndarray) -> int:
        if slots.size:
            self.states.free(slots)
        return int(slots.size)

    def check_integrity(self) -> None:
        """Tree and allocators intact, and every run and state slot in use is the tree's
        (between requests nothing else holds any)."""
        self.tree.check_integrity()
        self.runs.check_integrity()
        self.states.check_integrity()
        runs, slots = [EMPTY], []
        stack = list(self.tree.root.children.values())
        while stack:
            node = stack.pop()
            runs.append(node.full.value)
            if node.mamba.value is not None:
                slots.append(node.mamba.value)
            stack.extend(node.children.values())
        for what, allocator, held in (("page runs", self.runs, np.concatenate(runs)),
                                      ("state slots", self.states, np.array(slots, np.int64))):
            if not np.array_equal(np.sort(held), allocator.allocated()):
                raise RuntimeError(f"replay: the tree holds {held.size} {what}, the allocator "
                                   f"has {len(allocator.allocated())} in use (leaked or freed "
                                   "twice)")

    def settle(self, result, slot: int | None) -> None:
        """Free what an insert handed back: duplicated KV, and a state the tree already had."""
        if result.duplicate_indices.size:
            self.runs.free(result.duplicate_indices)
        if result.mamba_existed:
            self.states.free(np.array([slot], dtype=np.int64))
            self.counters.state_already_present += 1


def replay(requests: Sequence[Request] | Iterable[Request], spec: ReplaySpec,
           progress: Sequence[Progress] = (), *, check_every: int = 0,
           unit_runs: bool = False) -> ReplayOutput:
    """Replay ``requests`` in order; ``check_every`` > 0 checks the conservation law (tree
    and allocators agree on every index) after every that many requests and at the end.
    ``unit_runs`` keys the tree by single pages, as a branching replay always does (the
    answer is the same; the runs only save work)."""
    requests = list(requests)
    branch_on = spec.has_state and spec.checkpoints is Checkpoints.BRANCH
    minus_one = spec.match_key is MatchKey.PROMPT_MINUS_ONE
    # SGLang's checkpoint grid counts pages, so a branching replay keys single pages.
    keyer = RunKeyer(requests, spec.page_tokens, minus_one=minus_one,
                     unit_runs=unit_runs or branch_on)
    tree = RadixTree(page_size=1, mamba_chunk_tokens=spec.grid_pages if keyer.unit_runs else 1,
                     components=spec.components.tree_components,
                     rules=TreeRules.from_rules(get_rules(spec.rules)))
    counters = Counters()
    pools = _Pools(spec, tree, counters, keyer.max_run_pages)
    page, total = spec.page_tokens, len(requests)
    prompt = np.zeros(total, dtype=np.int64)
    hits = np.zeros(total, dtype=np.int32)
    kv_hits = np.zeros(total, dtype=np.int32)
    step = max(1, total // 100)
    for i, request in enumerate(requests):
        keys, ends, pages = keyer.runs(request)
        length = request.prompt_tokens
        num_runs = len(keys)
        matched = keys[: bisect_right(ends, (length - 1) // page)] if minus_one else keys
        match = tree.match_prefix(matched)
        hit = match.device_hit_length  # runs
        hit_pages = int(ends[hit - 1]) if hit else 0
        branch = match.mamba_branching_seqlen if branch_on else None
        receipt = tree.lock(match.last_device_node) if hit else None
        num_states = (2 if branch is not None else 1) if spec.has_state else 0
        fresh, slots = pools.take(request.rid, -(-length // page) - hit_pages, pages[hit:],
                                  num_states)
        indices = np.concatenate((match.device_indices, fresh)) if hit else fresh
        if branch is not None:
            done = tree.insert(keys[:branch], indices[:branch], int(slots[0]))
            counters.branching_checkpoints += 1
            pools.settle(done, int(slots[0]))
            if done.duplicate_indices.size:  # the prefix now lives in the tree's own slots
                indices = np.concatenate((tree.path_device_indices(done.node), indices[branch:]))
        last = int(slots[-1]) if spec.has_state else None
        if num_runs:
            # The locked match is the request's own prefix: the insert walks only below it.
            below = match.last_device_node if receipt is not None and branch is None else None
            pools.settle(tree.insert(keys, indices, last, below=below), last)
        elif last is not None:
            pools.states.free(slots[-1:])
        if receipt is not None:
            tree.unlock(receipt)
        kv_pages = int(ends[match.full_kv_hit_length - 1]) if match.full_kv_hit_length else 0
        prompt[i], hits[i], kv_hits[i] = length, hit_pages * page, kv_pages * page
        if check_every and ((i + 1) % check_every == 0 or i + 1 == total):
            pools.check_integrity()
        if progress and ((i + 1) % step == 0 or i + 1 == total):
            for report in progress:
                report(i + 1, total)
    return ReplayOutput(spec=spec, prompt_tokens=prompt, hits=hits, kv_hits=kv_hits,
                        counters=counters, final_cached_tokens=pools.runs.num_used_pages * page,
                        final_cached_states=tree.sizes().mamba_slots)
