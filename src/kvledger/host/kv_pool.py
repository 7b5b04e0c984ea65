"""HostKVPool: the anchor host pool, whole pages of full-attention KV rows in DRAM.

One host page holds what one device page holds for every full layer: P tokens × Q planes ×
B bytes, in a HostLayout. The host row must equal the device row byte for byte. SGLang
0.5.21 built its MLA host pool `kv_lora_rank + qk_rope_head_dim` wide (512 B) beside a 528 B
scaled-fp8 device row, so every backup dropped the fp8 scales; here such a pool is refused at
construction (HostRowError), which is why `kvledger.sglang.hicache.ARTICLE_HOST` can be planned but
never built.

Host token slots are `page·P + offset`, as in the tree's `host_value`; pages are allocated
whole and freed whole.

>>> pool = HostKVPool(num_pages=4, page_tokens=2, num_layers=3, device_row_bytes=528)
>>> pool.buffer.shape, pool.alloc(4).tolist(), pool.num_free_tokens
(torch.Size([4, 2, 3, 528]), [0, 1, 2, 3], 4)
>>> HostKVPool(num_pages=4, page_tokens=2, num_layers=3, device_row_bytes=528,
...            host_row_bytes=512)
Traceback (most recent call last):
...
kvledger.host.kv_pool.HostRowError: host KV row of 512 B for a device row of 528 B: a backup would drop bytes (the fp8 scales, as in sglang-0.5.21); the host row must equal the device row
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from kvledger.host.allocator import HostUnits
from kvledger.host.copy import can_interleave, deinterleave, interleave, rows, words
from kvledger.host.device import DeviceBytes
from kvledger.host.layout import HostLayout, host_zeros
from kvledger.host.runs import PageRun, pages_to_slots, slots_to_pages
from kvledger.pools.errors import IntegrityError

Checkpoint = Callable[[], None]  # called after each copied run; a fault hook may raise there


class HostRowError(ValueError):
    """A host KV row that differs from the device row it backs up."""


class HostKVPool:
    def __init__(self, *, num_pages: int, page_tokens: int, num_layers: int,
                 device_row_bytes: int, planes_per_layer: int = 1,
                 host_row_bytes: int | None = None,
                 layout: HostLayout = HostLayout.PAGE_FIRST,
                 device: torch.device | str = "cpu") -> None:
        host_row = device_row_bytes if host_row_bytes is None else host_row_bytes
        if host_row != device_row_bytes:
            verdict = ("a backup would drop bytes (the fp8 scales, as in sglang-0.5.21)"
                       if host_row < device_row_bytes else "rows would not line up")
            raise HostRowError(f"host KV row of {host_row} B for a device row of "
                               f"{device_row_bytes} B: {verdict}; the host row must equal the "
                               "device row")
        if num_pages < 1:
            raise ValueError(f"a host KV pool needs at least one page, got {num_pages}")
        if device_row_bytes % planes_per_layer:
            raise ValueError(f"a {device_row_bytes} B row does not split into "
                             f"{planes_per_layer} equal planes")
        self.layout = layout
        self.page_tokens = page_tokens
        self.num_layers = num_layers
        self.num_planes = num_layers * planes_per_layer
        self.row_bytes = device_row_bytes // planes_per_layer  # per plane
        self.device_row_bytes = device_row_bytes
        self.pages = HostUnits(capacity=num_pages, what="host KV page")
        self.buffer = host_zeros(layout.kv_shape(num_pages, self.num_planes, page_tokens,
                                                 self.row_bytes), device)
        self.canonical = layout.kv_canonical(self.buffer)  # (H, Q, P, B)
        self.buffer_words = words(self.buffer)  # for interleaving backups
        # For deinterleaving loadbacks: (H, P, Q) token rows, or (H, Q) whole page-planes.
        self.buffer_rows = None
        if layout is HostLayout.PAGE_FIRST:
            self.buffer_rows = rows(self.buffer)
        elif layout is HostLayout.PAGE_FIRST_DIRECT:
            self.buffer_rows = rows(self.buffer.view(num_pages, self.num_planes, -1))

    @property
    def capacity_tokens(self) -> int:
        return self.pages.capacity * self.page_tokens

    @property
    def num_free_tokens(self) -> int:
        return self.pages.num_free * self.page_tokens

    @property
    def num_used_tokens(self) -> int:
        return self.pages.num_used * self.page_tokens

    @property
    def page_bytes(self) -> int:
        return self.page_tokens * self.num_planes * self.row_bytes

    def alloc(self, num_tokens: int) -> np.ndarray | None:
        """Host token slots of whole fresh pages, or None when too few pages are free."""
        assert num_tokens % self.page_tokens == 0, f"{num_tokens} tokens are not whole pages"
        pages = self.pages.alloc(num_tokens // self.page_tokens)
        return None if pages is None else pages_to_slots(pages, self.page_tokens)

    def free(self, host_slots: np.ndarray) -> None:
        self.pages.free(slots_to_pages(host_slots, self.page_tokens))

    def check_device(self, dev: DeviceBytes) -> None:
        """The device planes this pool mirrors: same plane count, row and page size."""
        if (len(dev.kv_planes), dev.row_bytes, dev.page_tokens) != (
                self.num_planes, self.row_bytes, self.page_tokens):
            raise HostRowError(
                f"device KV of {len(dev.kv_planes)} planes × {dev.row_bytes} B rows, page "
                f"{dev.page_tokens} vs host {self.num_planes} × {self.row_bytes} B, page "
                f"{self.page_tokens}")

    def backup(self, dev: DeviceBytes, runs: list[PageRun], checkpoint: Checkpoint) -> None:
        """Copy device pages into host pages, run by run (device page → host page): one
        interleaving copy into the host block (page-first layouts, same device), else one
        copy per plane."""
        planes = dev.kv_page_words
        fused = self.layout.page_contiguous and can_interleave(dev.device, self.buffer.device)
        dim = 2 if self.layout is HostLayout.PAGE_FIRST else 1  # the plane axis of a block
        out = self.buffer_words
        for d, h, k in runs:
            if fused:
                interleave([plane[d : d + k] for plane in planes], out[h : h + k], dim)
            else:
                for q in range(self.num_planes):
                    self.canonical[h : h + k, q].copy_(dev.kv_page_view(q)[d : d + k])
            checkpoint()

    def loadback(self, dev: DeviceBytes, runs: list[PageRun], checkpoint: Checkpoint) -> None:
        """Copy host pages back into device pages, run by run (device page → host page): each
        plane's rows (page_first) or page-planes (page_first_direct) gathered from an
        L2-sized chunk of host blocks on the CPU, else one copy per plane."""
        match self.layout:
            case HostLayout.PAGE_FIRST:
                dim, parts = 2, dev.kv_page_rows
            case HostLayout.PAGE_FIRST_DIRECT:
                dim, parts = 1, dev.kv_block_rows
            case HostLayout.LAYER_FIRST:
                dim, parts = 0, ()  # each plane's pages are one contiguous block already
        for d, h, k in runs:
            if parts and self.buffer_rows is not None:
                deinterleave(self.buffer_rows[h : h + k], dim, [p[d : d + k] for p in parts])
            else:
                block = self.canonical[h : h + k]
                for q in range(self.num_planes):
                    dev.kv_page_view(q)[d : d + k].copy_(block[:, q])
            checkpoint()

    def read_pages(self, host_slots: np.ndarray) -> torch.Tensor:
        """(pages, Q, P, B) copy of host pages, for tests and verification."""
        pages = torch.from_numpy(slots_to_pages(host_slots, self.page_tokens))
        return self.canonical[pages]

    def check_integrity(self) -> None:
        self.pages.check_integrity()
        want = self.layout.kv_shape(self.pages.capacity, self.num_planes, self.page_tokens,
                                    self.row_bytes)
        if tuple(self.buffer.shape) != want or self.buffer.dtype != torch.uint8:
            raise IntegrityError(f"host KV buffer {tuple(self.buffer.shape)}, want {want} uint8")
