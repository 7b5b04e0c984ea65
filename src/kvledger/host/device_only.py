"""DeviceOnlyTier: the host tier switched off, as a null object.

It answers the part of ``HiCacheController``'s contract a cache facade uses — hit and insert
hooks, device eviction that frees into the allocators, loadback — so a facade without host
memory never asks whether a host tier exists. Eviction simply drops device copies; nothing
is ever backed up, so every match is a device hit.

>>> import numpy as np
>>> from kvledger.pools.ids import StateSlotAllocator
>>> from kvledger.pools.paged import PagedTokenAllocator
>>> tokens = PagedTokenAllocator(num_pages=2, page_tokens=4)
>>> states = StateSlotAllocator(num_slots=2)
>>> tree = RadixTree(page_size=4)
>>> tier = DeviceOnlyTier(tree, tokens, states)
>>> node = tree.insert(np.arange(4), tokens.alloc(4), int(states.alloc(1)[0])).node
>>> tier.on_insert(None), tier.loadback(tree.match_prefix(np.arange(4))).status.value
(<BackupOutcome.NOT_DUE: 'not due'>, 'already on device')
>>> tier.evict_device(full_tokens=4).num_full_tokens, tokens.num_free_pages, states.num_free
(4, 2, 2)
"""

from __future__ import annotations

from kvledger.host.results import BackupOutcome, LoadbackResult, LoadStatus
from kvledger.pools.ids import StateSlotAllocator
from kvledger.pools.paged import PagedTokenAllocator
from kvledger.tree import EvictResult, InsertResult, MatchResult, Node, RadixTree


class DeviceOnlyTier:
    def __init__(self, tree: RadixTree, tokens: PagedTokenAllocator,
                 states: StateSlotAllocator) -> None:
        self.tree, self.tokens, self.states = tree, tokens, states

    def on_insert(self, result: InsertResult) -> BackupOutcome:
        return BackupOutcome.NOT_DUE

    def on_hit(self, node: Node) -> BackupOutcome:
        return BackupOutcome.NOT_DUE

    def evict_device(self, *, full_tokens: int = 0, mamba_slots: int = 0) -> EvictResult:
        result = self.tree.evict(full_tokens=full_tokens, mamba_slots=mamba_slots)
        self.tokens.free(result.full_indices)
        self.states.free(result.mamba_slots)
        return result

    def loadback(self, match: MatchResult, *, request_slot: int | None = None) -> LoadbackResult:
        node = match.last_device_node
        assert node is match.best_match_node, "a device-only tree has no host hits"
        return LoadbackResult(status=LoadStatus.DEVICE_HIT, node=node,
                              device_indices=match.device_indices, mamba_slot=node.mamba.value,
                              loaded_tokens=0, loaded_state=False, request_slot=request_slot)

    def check_integrity(self) -> None:
        self.tree.check_integrity()
