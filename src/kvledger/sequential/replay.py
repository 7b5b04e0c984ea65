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

The tree runs over page keys (a tree page of one key) and the allocators over page ids, so a
page-64 replay moves 64× fewer indices than tokens; lengths are converted back to tokens.

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

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from kvledger.pools.ids import StateSlotAllocator
from kvledger.pools.paged import PagedTokenAllocator
from kvledger.sequential.keys import PromptKeyer
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
    """The page and state allocators with the tree that holds part of them."""

    def __init__(self, spec: ReplaySpec, tree: RadixTree, counters: Counters) -> None:
        self.page = spec.page_tokens
        self.tree = tree
        self.counters = counters
        self.kv = PagedTokenAllocator(num_pages=spec.pool_pages, page_tokens=1)
        # Every page id the replay frees comes from the tree (no slot is held by two nodes,
        # RadixTree.check_integrity) or from one allocation, so it frees through
        # free_unique: still checked held, without the search for repeats.
        self.pages = self.kv.pages
        self.states = StateSlotAllocator(num_slots=spec.state_slots or 0)

    def take(self, rid: int, num_pages: int, num_states: int) -> tuple[np.ndarray, np.ndarray]:
        short_pages = max(0, num_pages - self.pages.num_free)
        short_states = max(0, num_states - self.states.num_free)
        if short_pages or short_states:
            freed = self.tree.evict(full_tokens=short_pages, mamba_slots=short_states)
            self.pages.free_unique(freed.full_indices)
            self.states.free(freed.mamba_slots)
            c = self.counters
            c.evict_calls += 1
            c.evicted_tokens += freed.num_full_tokens * self.page
            c.evicted_states += freed.num_mamba_slots
        pages = self.pages.alloc(num_pages)
        if pages is None or num_states > self.states.num_free:
            page = self.page
            raise ReplayError(
                f"request {rid}: needs {num_pages * page:,} more KV tokens and {num_states} "
                f"state slot(s); {self.pages.num_free * page:,} tokens and "
                f"{self.states.num_free} slot(s) are free after evicting everything unlocked "
                "(the KV pool is too small for this prompt)")
        return pages, self.states.alloc(num_states)

    def check_integrity(self) -> None:
        """Tree and allocators intact, and every page and state slot in use is the tree's
        (between requests nothing else holds any)."""
        self.tree.check_integrity()
        self.kv.check_integrity()
        self.states.check_integrity()
        pages, slots = [EMPTY], []
        stack = list(self.tree.root.children.values())
        while stack:
            node = stack.pop()
            pages.append(node.full.value)
            if node.mamba.value is not None:
                slots.append(node.mamba.value)
            stack.extend(node.children.values())
        for what, allocator, held in (("pages", self.pages, np.concatenate(pages)),
                                      ("state slots", self.states, np.array(slots, np.int64))):
            if not np.array_equal(np.sort(held), allocator.allocated()):
                raise RuntimeError(f"replay: the tree holds {held.size} {what}, the allocator "
                                   f"has {allocator.num_used} in use (leaked or freed twice)")

    def settle(self, result, slot: int | None) -> None:
        """Free what an insert handed back: duplicated KV, and a state the tree already had."""
        if result.duplicate_indices.size:
            self.pages.free_unique(result.duplicate_indices)
        if result.mamba_existed:
            self.states.free(np.array([slot], dtype=np.int64))
            self.counters.state_already_present += 1


def replay(requests: Sequence[Request] | Iterable[Request], spec: ReplaySpec,
           progress: Sequence[Progress] = (), *, check_every: int = 0) -> ReplayOutput:
    """Replay ``requests`` in order; ``check_every`` > 0 checks the conservation law (tree
    and allocators agree on every index) after every that many requests and at the end."""
    requests = list(requests)
    tree = RadixTree(page_size=1, mamba_chunk_tokens=spec.grid_pages,
                     components=spec.components.tree_components,
                     rules=TreeRules.from_rules(get_rules(spec.rules)))
    counters = Counters()
    pools = _Pools(spec, tree, counters)
    keyer = PromptKeyer(spec.page_tokens)
    page, total = spec.page_tokens, len(requests)
    branch_on = spec.has_state and spec.checkpoints is Checkpoints.BRANCH
    minus_one = spec.match_key is MatchKey.PROMPT_MINUS_ONE
    prompt = np.zeros(total, dtype=np.int64)
    hits = np.zeros(total, dtype=np.int32)
    kv_hits = np.zeros(total, dtype=np.int32)
    step = max(1, total // 100)
    for i, request in enumerate(requests):
        keys = keyer.keys(request)
        length = request.prompt_tokens
        full_pages = len(keys)
        match = tree.match_prefix(keys[: (length - 1) // page] if minus_one else keys)
        hit = match.device_hit_length
        branch = match.mamba_branching_seqlen if branch_on else None
        receipt = tree.lock(match.last_device_node) if hit else None
        num_states = (2 if branch is not None else 1) if spec.has_state else 0
        fresh, slots = pools.take(request.rid, -(-length // page) - hit, num_states)
        indices = np.concatenate((match.device_indices, fresh)) if hit else fresh
        if branch is not None:
            done = tree.insert(keys[:branch], indices[:branch], int(slots[0]))
            counters.branching_checkpoints += 1
            pools.settle(done, int(slots[0]))
            if done.duplicate_indices.size:  # the prefix now lives in the tree's own slots
                indices = np.concatenate((tree.path_device_indices(done.node), indices[branch:]))
        last = int(slots[-1]) if spec.has_state else None
        if full_pages:
            pools.settle(tree.insert(keys, indices[:full_pages], last), last)
        elif last is not None:
            pools.states.free(slots[-1:])
        if len(indices) > full_pages:  # the partial last page is never cached
            pools.pages.free_unique(indices[full_pages:])
        if receipt is not None:
            tree.unlock(receipt)
        prompt[i], hits[i], kv_hits[i] = length, hit * page, match.full_kv_hit_length * page
        if check_every and ((i + 1) % check_every == 0 or i + 1 == total):
            pools.check_integrity()
        if progress and ((i + 1) % step == 0 or i + 1 == total):
            for report in progress:
                report(i + 1, total)
    sizes = tree.sizes()
    return ReplayOutput(spec=spec, prompt_tokens=prompt, hits=hits, kv_hits=kv_hits,
                        counters=counters, final_cached_tokens=sizes.full_tokens * page,
                        final_cached_states=sizes.mamba_slots)
