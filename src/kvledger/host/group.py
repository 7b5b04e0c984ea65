"""HostPoolGroup: the allocation facade over the anchor KV pool and its side pools.

Like SGLang's HostPoolGroup (mem_cache/pool_host/group.py: "Allocation facade for an anchor
host pool and its side pools") it holds no data of its own:

    KV       anchor: host pages, allocated here
    INDEXER  side pool, host pages derived from KV's (allocated and freed with them)
    MAMBA    side pool, host state slots, allocated here

`alloc` is all-or-nothing across pools: either every pool gets what was asked or nothing
changes (check, then commit). `backup` and `loadback` move one batch of pages and slots
through every pool; a fault raised by `checkpoint` midway leaves host values unrecorded, and
the caller frees the allocation.

>>> from kvledger.host.kv_pool import HostKVPool
>>> from kvledger.host.side_pools import HostStatePool
>>> group = HostPoolGroup(
...     kv=HostKVPool(num_pages=2, page_tokens=4, num_layers=1, device_row_bytes=8),
...     indexer=None,
...     state=HostStatePool(num_slots=1, num_layers=1, conv_bytes=4, temporal_bytes=4))
>>> a = group.alloc(num_tokens=8, num_state_slots=1)
>>> a.kv_slots.tolist(), a.state_slots.tolist()
([0, 1, 2, 3, 4, 5, 6, 7], [0])
>>> group.alloc(num_tokens=4, num_state_slots=0) is None  # all pages taken: nothing changes
True
>>> group.free(a); group.sizes().kv_free_tokens
8
>>> group.page_bytes, group.state_slot_bytes  # 4 tokens × 1 layer × 8 B; 1 layer × (4 + 4) B
(32, 8)
>>> group.transfer_bytes(num_tokens=8, num_state_slots=1)  # 2 pages + 1 state
72
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

from kvledger.host.device import DeviceBytes
from kvledger.host.kv_pool import Checkpoint, HostKVPool
from kvledger.host.runs import PageRun, page_runs, slots_to_pages
from kvledger.host.side_pools import HostIndexerPool, HostStatePool

EMPTY = np.zeros(0, dtype=np.int64)


class PoolName(Enum):
    KV = "kv"
    INDEXER = "indexer"
    MAMBA = "mamba"


@dataclass(frozen=True, slots=True, kw_only=True)
class HostAllocation:
    kv_slots: np.ndarray  # host token slots, whole pages (INDEXER uses the same)
    state_slots: np.ndarray  # host state slots

    @property
    def num_tokens(self) -> int:
        return len(self.kv_slots)


@dataclass(frozen=True, slots=True, kw_only=True)
class HostSizes:
    kv_capacity_tokens: int
    kv_free_tokens: int
    state_capacity_slots: int
    state_free_slots: int
    buffer_bytes: int  # host memory held by every pool

    @property
    def kv_used_tokens(self) -> int:
        return self.kv_capacity_tokens - self.kv_free_tokens

    @property
    def state_used_slots(self) -> int:
        return self.state_capacity_slots - self.state_free_slots


class HostPoolGroup:
    def __init__(self, *, kv: HostKVPool, indexer: HostIndexerPool | None,
                 state: HostStatePool | None) -> None:
        if indexer is not None and (indexer.num_pages, indexer.page_tokens) != (
                kv.pages.capacity, kv.page_tokens):
            raise ValueError("the INDEXER side pool must have the KV pool's pages (derived ids)")
        self.kv = kv
        self.indexer = indexer
        self.state = state
        self.entries: dict[PoolName, HostKVPool | HostIndexerPool | HostStatePool] = {
            PoolName.KV: kv}
        if indexer is not None:
            self.entries[PoolName.INDEXER] = indexer
        if state is not None:
            self.entries[PoolName.MAMBA] = state

    @property
    def page_bytes(self) -> int:
        """Host bytes of one page: its KV rows in every full layer plus its index-key pages
        (equal to the device bytes it mirrors: host rows are device rows)."""
        index = self.indexer
        return self.kv.page_bytes + (0 if index is None else index.num_layers * index.page_bytes)

    @property
    def state_slot_bytes(self) -> int:
        return 0 if self.state is None else self.state.slot_bytes

    def transfer_bytes(self, *, num_tokens: int, num_state_slots: int) -> int:
        """Bytes a backup or loadback of whole pages and state slots moves, each way."""
        assert num_tokens % self.kv.page_tokens == 0, f"{num_tokens} tokens are not whole pages"
        return (num_tokens // self.kv.page_tokens * self.page_bytes
                + num_state_slots * self.state_slot_bytes)

    def check_device(self, dev: DeviceBytes) -> None:
        """Refuse a device whose shapes these host pools cannot mirror byte for byte."""
        for pool in self.entries.values():
            pool.check_device(dev)

    def can_alloc(self, num_tokens: int, num_state_slots: int) -> bool:
        state_free = self.state.slots.num_free if self.state is not None else 0
        return num_tokens <= self.kv.num_free_tokens and num_state_slots <= state_free

    def alloc(self, *, num_tokens: int, num_state_slots: int) -> HostAllocation | None:
        """Host pages for `num_tokens` (whole pages) and `num_state_slots`, or None."""
        if not self.can_alloc(num_tokens, num_state_slots):
            return None
        kv = self.kv.alloc(num_tokens) if num_tokens else EMPTY
        states = EMPTY
        if num_state_slots:
            assert self.state is not None
            states = self.state.slots.alloc(num_state_slots)
        assert kv is not None and states is not None, "can_alloc said yes"
        return HostAllocation(kv_slots=kv, state_slots=states)

    def free(self, allocation: HostAllocation) -> None:
        self.free_kv(allocation.kv_slots)
        self.free_states(allocation.state_slots)

    def free_kv(self, host_slots: np.ndarray) -> None:
        if len(host_slots):
            self.kv.free(host_slots)

    def free_states(self, host_slots: np.ndarray) -> None:
        if len(host_slots):
            assert self.state is not None, "host state slots without a host state pool"
            self.state.slots.free(host_slots)

    def backup(self, dev: DeviceBytes, *, kv_device: np.ndarray, kv_host: np.ndarray,
               state_device: np.ndarray, state_host: np.ndarray, checkpoint: Checkpoint) -> None:
        if len(kv_device):
            runs = self._runs(kv_device, kv_host)
            self.kv.backup(dev, runs, checkpoint)
            if self.indexer is not None:
                self.indexer.backup(dev, runs, checkpoint)
        if len(state_device):
            assert self.state is not None
            self.state.backup(dev, state_device, state_host, checkpoint)

    def loadback(self, dev: DeviceBytes, *, kv_host: np.ndarray, kv_device: np.ndarray,
                 state_host: np.ndarray, state_device: np.ndarray,
                 checkpoint: Checkpoint) -> None:
        if len(kv_host):
            runs = self._runs(kv_device, kv_host)
            self.kv.loadback(dev, runs, checkpoint)
            if self.indexer is not None:
                self.indexer.loadback(dev, runs, checkpoint)
        if len(state_host):
            assert self.state is not None
            self.state.loadback(dev, state_host, state_device, checkpoint)

    def _runs(self, device_slots: np.ndarray, host_slots: np.ndarray) -> list[PageRun]:
        """(device page, host page, length) runs of whole pages, shared by KV and INDEXER."""
        page = self.kv.page_tokens
        return page_runs(slots_to_pages(device_slots, page), slots_to_pages(host_slots, page))

    def sizes(self) -> HostSizes:
        state = self.state
        buffers = [self.kv.buffer, *(() if self.indexer is None else (self.indexer.buffer,)),
                   *(() if state is None else state.buffers)]
        return HostSizes(
            kv_capacity_tokens=self.kv.capacity_tokens, kv_free_tokens=self.kv.num_free_tokens,
            state_capacity_slots=0 if state is None else state.slots.capacity,
            state_free_slots=0 if state is None else state.slots.num_free,
            buffer_bytes=sum(buf.nbytes for buf in buffers),
        )

    def check_integrity(self) -> None:
        """Every pool's own law (free + used == capacity, buffer shapes)."""
        for pool in self.entries.values():
            pool.check_integrity()
