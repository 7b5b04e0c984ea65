"""Host side pools: DSA index keys (INDEXER) and linear-attention states (MAMBA).

INDEXER has no allocator of its own: its host pages are the KV pool's (SGLang's
`indices_from_pool=PoolName.KV`), so a host KV page and its index keys are freed together.
It stores each device index page whole — all key bytes of the page, then all scale bytes —
so a page moves as one block per layer, whatever the rule set's page geometry.

MAMBA has page size 1: one host slot holds one state slot of every linear layer, conv and
temporal parts (pool_host/mamba.py `MambaPoolHost`). Layout (bytes):

    PAGE_FIRST, PAGE_FIRST_DIRECT   (S, Lm·conv + Lm·temporal)   one block per host slot
    LAYER_FIRST                     conv (Lm, S, conv), temporal (Lm, S, temporal)

>>> states = HostStatePool(num_slots=2, num_layers=3, conv_bytes=8, temporal_bytes=16)
>>> states.conv.shape, states.temporal.shape, states.slots.alloc(1).tolist()
(torch.Size([2, 3, 8]), torch.Size([2, 3, 16]), [0])
"""

from __future__ import annotations

import numpy as np
import torch

from kvledger.host.allocator import HostUnits
from kvledger.host.copy import can_interleave, deinterleave, interleave, rows, words
from kvledger.host.device import DeviceBytes
from kvledger.host.kv_pool import Checkpoint
from kvledger.host.layout import HostLayout, host_zeros
from kvledger.host.runs import PageRun, page_runs
from kvledger.pools.errors import IntegrityError


class HostIndexerPool:
    def __init__(self, *, num_pages: int, page_tokens: int, num_layers: int, page_bytes: int,
                 layout: HostLayout = HostLayout.PAGE_FIRST,
                 device: torch.device | str = "cpu") -> None:
        self.layout = layout
        self.page_tokens = page_tokens
        self.num_layers = num_layers
        self.page_bytes = page_bytes
        self.num_pages = num_pages
        self.buffer = host_zeros(layout.block_shape(num_pages, num_layers, page_bytes), device)
        self.canonical = layout.block_canonical(self.buffer)  # (H, Li, page_bytes)
        self.buffer_words = words(self.buffer)
        self.buffer_rows = rows(self.buffer) if layout.page_contiguous else None  # (H, Li)

    def check_device(self, dev: DeviceBytes) -> None:
        if (len(dev.index_pages), dev.index_page_bytes) != (self.num_layers, self.page_bytes):
            raise ValueError(f"device index keys: {len(dev.index_pages)} layers × "
                             f"{dev.index_page_bytes} B pages; host: {self.num_layers} × "
                             f"{self.page_bytes} B")

    def backup(self, dev: DeviceBytes, runs: list[PageRun], checkpoint: Checkpoint) -> None:
        """Device index pages → host pages, run by run (device page → host page)."""
        fused = self.layout.page_contiguous and can_interleave(dev.device, self.buffer.device)
        for d, h, k in runs:
            if fused:
                interleave([layer[d : d + k] for layer in dev.index_words],
                           self.buffer_words[h : h + k], 1)
            else:
                for i, layer in enumerate(dev.index_pages):
                    self.canonical[h : h + k, i].copy_(layer[d : d + k])
            checkpoint()

    def loadback(self, dev: DeviceBytes, runs: list[PageRun], checkpoint: Checkpoint) -> None:
        """Host index pages → device pages, run by run (device page → host page)."""
        by_rows = self.buffer_rows is not None and bool(dev.index_rows)
        for d, h, k in runs:
            if by_rows:
                deinterleave(self.buffer_rows[h : h + k], 1,
                             [layer[d : d + k] for layer in dev.index_rows])
            else:
                for i, layer in enumerate(dev.index_pages):
                    layer[d : d + k].copy_(self.canonical[h : h + k, i])
            checkpoint()

    def check_integrity(self) -> None:
        want = self.layout.block_shape(self.num_pages, self.num_layers, self.page_bytes)
        if tuple(self.buffer.shape) != want:
            raise IntegrityError(f"host index buffer {tuple(self.buffer.shape)}, want {want}")


class HostStatePool:
    def __init__(self, *, num_slots: int, num_layers: int, conv_bytes: int, temporal_bytes: int,
                 layout: HostLayout = HostLayout.PAGE_FIRST,
                 device: torch.device | str = "cpu") -> None:
        self.layout = layout
        self.num_layers = num_layers
        self.conv_bytes = conv_bytes
        self.temporal_bytes = temporal_bytes
        self.slots = HostUnits(capacity=num_slots, what="host state slot")
        if layout.page_contiguous:
            self.buffers = (host_zeros((num_slots, num_layers * (conv_bytes + temporal_bytes)),
                                       device),)
            split = num_layers * conv_bytes
            self.conv = self.buffers[0][:, :split].unflatten(1, (num_layers, conv_bytes))
            self.temporal = self.buffers[0][:, split:].unflatten(1, (num_layers, temporal_bytes))
        else:
            self.buffers = (host_zeros((num_layers, num_slots, conv_bytes), device),
                            host_zeros((num_layers, num_slots, temporal_bytes), device))
            self.conv, self.temporal = (buf.transpose(0, 1) for buf in self.buffers)
        # conv and temporal are (S, Lm, bytes) views whatever the layout

    @property
    def slot_bytes(self) -> int:
        return self.num_layers * (self.conv_bytes + self.temporal_bytes)

    def check_device(self, dev: DeviceBytes) -> None:
        if dev.conv is None or dev.temporal is None:
            raise ValueError("a host state pool needs a device state pool")
        got = (dev.conv.shape[0], *dev.state_part_bytes)
        if got != (self.num_layers, self.conv_bytes, self.temporal_bytes):
            raise ValueError(f"device state (layers, conv B, temporal B) = {got}; host "
                             f"{(self.num_layers, self.conv_bytes, self.temporal_bytes)}")

    def backup(self, dev: DeviceBytes, device_slots: np.ndarray, host_slots: np.ndarray,
               checkpoint: Checkpoint) -> None:
        assert dev.conv is not None and dev.temporal is not None
        for d, h, k in page_runs(device_slots, host_slots):
            self.conv[h : h + k].copy_(dev.conv[:, d : d + k].transpose(0, 1))
            self.temporal[h : h + k].copy_(dev.temporal[:, d : d + k].transpose(0, 1))
            checkpoint()

    def loadback(self, dev: DeviceBytes, host_slots: np.ndarray, device_slots: np.ndarray,
                 checkpoint: Checkpoint) -> None:
        assert dev.conv is not None and dev.temporal is not None
        for h, d, k in page_runs(host_slots, device_slots):
            dev.conv[:, d : d + k].copy_(self.conv[h : h + k].transpose(0, 1))
            dev.temporal[:, d : d + k].copy_(self.temporal[h : h + k].transpose(0, 1))
            checkpoint()

    def check_integrity(self) -> None:
        self.slots.check_integrity()
        want = (self.slots.capacity, self.num_layers)
        if tuple(self.conv.shape[:2]) != want or tuple(self.temporal.shape[:2]) != want:
            raise IntegrityError(f"host state views {tuple(self.conv.shape)} / "
                                 f"{tuple(self.temporal.shape)}, want {want} leading dims")
