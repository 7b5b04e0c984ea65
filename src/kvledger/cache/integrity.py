"""The facade's ownership law: every device page and state slot is owned exactly once.

`HybridCache.check_integrity` first asks each part (host tier, store tier, rows, state
allocator) for its own law, then `check_ownership` cross-checks them: the ids the tree holds
plus the ids each running request owns are exactly the ids its allocator has in use (no id
held twice, leaked, or freed while held), and the facade's running totals (own pages, held
slots, reserved pages) equal the sums over its requests.

>>> from kvledger.cache.page_rows import PageRows
>>> from kvledger.cache.hybrid import HybridCache
>>> from kvledger.cache.seq import CheckpointMode
>>> from kvledger.pools.ids import StateSlotAllocator
>>> from kvledger.tree import RadixTree
>>> cache = HybridCache(rows=PageRows(num_pages=8, page_tokens=16, num_rows=2),
...                     tree=RadixTree(page_size=1, mamba_chunk_tokens=1),
...                     states=StateSlotAllocator(num_slots=6), held_slots_per_request=3,
...                     mode=CheckpointMode.TRACKED)
>>> seq = cache.admit(np.arange(3), prompt_tokens=40, final_tokens=41)
>>> check_ownership(cache)
>>> cache.own_pages += 1                       # a page counted twice breaks the law
>>> check_ownership(cache)
Traceback (most recent call last):
...
RuntimeError: HybridCache: own pages = Σ requests' own pages broken: 1 != 0
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from kvledger.pools.ids import IdAllocator
from kvledger.tree import RadixTree

if TYPE_CHECKING:
    from kvledger.cache.hybrid import HybridCache


def check_ownership(cache: HybridCache) -> None:
    """Tree ids + running requests' ids = allocated ids; totals = Σ over requests."""
    seqs = list(cache.running.values())
    tree_pages, tree_slots = _tree_ids(cache.tree)
    claimed = [cache.rows.page_ids(tree_pages), *(cache.rows.own_page_ids(s) for s in seqs)]
    _check_ids("token pages", np.concatenate(claimed), cache.rows.pages)
    own = sum(s.held_pages - s.cached_tokens // cache.page for s in seqs)
    slots = [slot for s in seqs for slot in s.slots]
    laws = {
        "own pages = Σ requests' own pages": (cache.own_pages, own),
        "held slots = Σ requests' slots": (cache.held_slots_total, len(slots)),
        "reserved pages = Σ requests' reservations": (
            cache.reserved_pages, sum(s.reserved_pages for s in seqs)),
    }
    for law, (got, want) in laws.items():
        if got != want:
            raise RuntimeError(f"HybridCache: {law} broken: {got} != {want}")
    if cache.states is not None:
        _check_ids("state slots", np.array([*tree_slots, *slots], dtype=np.int64), cache.states)
    if any(len(s.slots) > cache.held_slots for s in seqs):
        raise RuntimeError(f"a request holds more than {cache.held_slots} state slots")
    if cache.reserved_pages > cache.available_pages():
        raise RuntimeError(f"HybridCache: {cache.reserved_pages} pages reserved, only "
                           f"{cache.available_pages()} free + evictable")


def _tree_ids(tree: RadixTree) -> tuple[np.ndarray, list[int]]:
    """Every device FULL value and state slot the tree holds (a full walk; for checks)."""
    values: list[np.ndarray] = []
    slots: list[int] = []
    stack = list(tree.root.children.values())
    while stack:
        node = stack.pop()
        if node.full.value is not None:
            values.append(node.full.value)
        if node.mamba.value is not None:
            slots.append(int(node.mamba.value))
        stack.extend(node.children.values())
    return (np.concatenate(values) if values else np.zeros(0, dtype=np.int64)), slots


def _check_ids(what: str, claimed: np.ndarray, allocator: IdAllocator) -> None:
    claimed = np.sort(claimed)
    if not np.array_equal(claimed, allocator.allocated()):
        raise RuntimeError(f"{what}: the tree and the running requests claim {claimed.size} ids, "
                           f"the allocator has {allocator.num_used} in use (an id held twice, "
                           "leaked, or freed while held)")
