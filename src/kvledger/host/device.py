"""DeviceBytes: the device pool tensors the host tier copies, seen as bytes.

The host tier is dtype-blind: it moves bytes. This module takes SGLang-shaped device pools
(`kvledger.pools`) and exposes uint8 views over the same memory:

    kv_planes     Q tensors (T + P, B): one per full layer (MLA/DSA latent rows), or the K and
                  V buffers of each layer in turn (GQA: Q = 2L, B = row_bytes / 2)
    index_pages   one (T/P + 1, page_bytes) tensor per full layer (DSA index keys), or none
    conv, temporal  (Lm, K + 1, bytes) for the state pool, or None

>>> from kvledger.pools.latent import LatentKVPool
>>> from kvledger.sglang.specs import LatentRowSpec, RowLayout
>>> spec = LatentRowSpec(kv_lora_rank=512, qk_rope_head_dim=0, layout=RowLayout.BF16)
>>> dev = DeviceBytes.of(LatentKVPool(spec=spec, num_layers=2, num_token_slots=8, device="cpu"),
...                      None, page_tokens=4)
>>> len(dev.kv_planes), dev.kv_planes[0].shape, dev.row_bytes, dev.device_row_bytes
(2, torch.Size([8, 1024]), 1024, 1024)
>>> pages = dev.whole_pages()  # the same memory, one 4-token page per row
>>> pages.page_tokens, pages.kv_planes[0].shape, pages.device_row_bytes
(1, torch.Size([2, 4096]), 4096)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from kvledger.host.copy import rows, words
from kvledger.pools.build import DevicePools
from kvledger.pools.dsa import DsaTokenPool
from kvledger.pools.gqa import GqaKVPool
from kvledger.pools.hybrid import FullPool
from kvledger.pools.ids import StateSlotAllocator
from kvledger.pools.paged import PagedTokenAllocator
from kvledger.pools.state import MambaPool


def as_bytes(tensor: torch.Tensor, leading: int) -> torch.Tensor:
    """A uint8 view keeping the first `leading` dims and flattening the rest into bytes."""
    assert tensor.is_contiguous(), "device pool tensors are allocated contiguous"
    flat = tensor.reshape(*tensor.shape[:leading], -1)
    return flat.view(torch.uint8)


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceBytes:
    page_tokens: int
    planes_per_layer: int  # 1 (latent row) or 2 (K then V)
    kv_planes: tuple[torch.Tensor, ...]
    index_pages: tuple[torch.Tensor, ...]
    conv: torch.Tensor | None
    temporal: torch.Tensor | None
    # Views for the interleaving copies (kvledger.host.copy), built once by `assemble`:
    kv_page_words: tuple[torch.Tensor, ...]  # (pages, P, B) planes as float words
    kv_page_rows: tuple[np.ndarray, ...]  # (pages, P) token rows per plane; () off the CPU
    kv_block_rows: tuple[np.ndarray, ...]  # (pages,) whole page-planes; () off the CPU
    index_words: tuple[torch.Tensor, ...]  # (pages, page_bytes) as float words
    index_rows: tuple[np.ndarray, ...]  # (pages,) whole index pages; () off the CPU

    @classmethod
    def of(cls, full: FullPool, state: MambaPool | None, *, page_tokens: int) -> DeviceBytes:
        if isinstance(full, GqaKVPool):
            planes = tuple(as_bytes(buf, 1) for pair in zip(full.k_buffer, full.v_buffer,
                                                            strict=True) for buf in pair)
            per_layer = 2
        else:
            planes, per_layer = tuple(as_bytes(buf, 1) for buf in full.kv_buffer), 1
        index = ()
        if isinstance(full, DsaTokenPool):
            index = tuple(full.index_keys.buffers)
        return cls.assemble(page_tokens, per_layer, planes, index,
                            None if state is None else as_bytes(state.conv, 2),
                            None if state is None else as_bytes(state.temporal, 2))

    @classmethod
    def assemble(cls, page_tokens: int, planes_per_layer: int, planes: tuple[torch.Tensor, ...],
                 index: tuple[torch.Tensor, ...], conv: torch.Tensor | None,
                 temporal: torch.Tensor | None) -> DeviceBytes:
        """DeviceBytes over these byte tensors, with the copy views built once."""
        pages = [plane.view(-1, page_tokens, plane.shape[1]) for plane in planes]
        blocks = [plane.view(-1, page_tokens * plane.shape[1]) for plane in planes]
        cpu = planes[0].device.type == "cpu"
        return cls(page_tokens=page_tokens, planes_per_layer=planes_per_layer, kv_planes=planes,
                   index_pages=index, conv=conv, temporal=temporal,
                   kv_page_words=tuple(words(p) for p in pages),
                   kv_page_rows=tuple(rows(p) for p in pages) if cpu else (),
                   kv_block_rows=tuple(rows(b) for b in blocks) if cpu else (),
                   index_words=tuple(words(p) for p in index),
                   index_rows=tuple(rows(p) for p in index) if cpu else ())

    def whole_pages(self) -> DeviceBytes:
        """The same memory seen with one page as the unit: page_tokens 1, a plane row = the
        P token rows of one page (P·B bytes). Index-key pages and state slots are unchanged.

        For a caller whose tree keys whole pages (the simulator: one key per P-token page,
        a tree page of one key), so that tree, device and host agree on the page — one
        "token" of this view moves one device page, and a host pool built on it holds one
        device page per host page, byte for byte.
        """
        page_rows = tuple(plane.view(-1, self.page_tokens * self.row_bytes)
                          for plane in self.kv_planes)
        return DeviceBytes.assemble(1, self.planes_per_layer, page_rows, self.index_pages,
                                    self.conv, self.temporal)

    @property
    def device(self) -> torch.device:
        return self.kv_planes[0].device

    @property
    def row_bytes(self) -> int:
        """Bytes of one row of one plane."""
        return self.kv_planes[0].shape[1]

    @property
    def device_row_bytes(self) -> int:
        """Bytes of one token's row in one full layer (K + V for GQA)."""
        return self.row_bytes * self.planes_per_layer

    @property
    def num_token_slots(self) -> int:
        return self.kv_planes[0].shape[0]

    @property
    def index_page_bytes(self) -> int:
        return self.index_pages[0].shape[1] if self.index_pages else 0

    @property
    def state_part_bytes(self) -> tuple[int, int]:
        """(conv, temporal) bytes of one slot in one layer; (0, 0) without a state pool."""
        if self.conv is None or self.temporal is None:
            return 0, 0
        return self.conv.shape[2], self.temporal.shape[2]

    def kv_page_view(self, plane: int) -> torch.Tensor:
        """Plane `plane` as (pages, P, B)."""
        return self.kv_planes[plane].view(-1, self.page_tokens, self.row_bytes)


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceSide:
    """What the host tier needs of one rank's device: bytes to copy and allocators to fill."""

    bytes: DeviceBytes
    token_allocator: PagedTokenAllocator
    state_allocator: StateSlotAllocator | None
    mamba_pool: MambaPool | None  # for the copy of a loaded state into the request's slot

    def free_tokens(self, token_slots: np.ndarray) -> None:
        """Return whole pages of token slots to the paged allocator."""
        if len(token_slots):
            self.token_allocator.free(token_slots)

    def free_states(self, slots: np.ndarray) -> None:
        if len(slots):
            assert self.state_allocator is not None, "device states without a state pool"
            self.state_allocator.free(slots)

    def copy_state(self, src_slot: int, request_slot: int) -> None:
        """Copy-on-write of a cached state into a request's own slot (every linear layer)."""
        assert self.mamba_pool is not None, "a state copy without a state pool"
        self.mamba_pool.copy_slot(int(src_slot), int(request_slot))

    @classmethod
    def of(cls, pools: DevicePools) -> DeviceSide:
        kv = pools.kv
        return cls(bytes=DeviceBytes.of(kv.full_kv_pool, kv.mamba_pool,
                                        page_tokens=pools.plan.layout.page_tokens),
                   token_allocator=pools.token_allocator, state_allocator=pools.state_allocator,
                   mamba_pool=kv.mamba_pool)
