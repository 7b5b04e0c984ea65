"""HostLayout: how a host pool arranges pages, layers and token rows in DRAM.

Names and shapes follow SGLang's host pools (mem_cache/pool_host/mla.py `init_kv_buffer`),
in bytes, with H host pages of P tokens, Q byte planes (one per full layer for MLA; K and V
of each layer for GQA) and B bytes per row of a plane:

    PAGE_FIRST         (H, P, Q, B)   a page is one block; inside it, token-major
    PAGE_FIRST_DIRECT  (H, Q, P, B)   a page is one block; inside it, one run per plane
    LAYER_FIRST        (Q, H, P, B)   one block per plane, pages inside it

Every layout has a *canonical view* (H, Q, P, B) over the same memory, so the copy code is
written once; the layout only changes strides (and which copies can be fused).

>>> HostLayout.PAGE_FIRST.kv_shape(pages=3, planes=11, page_tokens=64, row_bytes=528)
(3, 64, 11, 528)
>>> buf = torch.zeros(HostLayout.LAYER_FIRST.kv_shape(3, 11, 64, 528), dtype=torch.uint8)
>>> HostLayout.LAYER_FIRST.kv_canonical(buf).shape
torch.Size([3, 11, 64, 528])
"""

from __future__ import annotations

from enum import Enum

import torch


class HostLayout(Enum):
    PAGE_FIRST = "page_first"  # SGLang's default with the kernel IO backend
    PAGE_FIRST_DIRECT = "page_first_direct"  # SGLang's layout for the direct IO backend
    LAYER_FIRST = "layer_first"

    @property
    def page_contiguous(self) -> bool:
        """Whether all layers of one host page form one contiguous block."""
        return self is not HostLayout.LAYER_FIRST

    def kv_shape(self, pages: int, planes: int, page_tokens: int,
                 row_bytes: int) -> tuple[int, int, int, int]:
        match self:
            case HostLayout.PAGE_FIRST:
                return (pages, page_tokens, planes, row_bytes)
            case HostLayout.PAGE_FIRST_DIRECT:
                return (pages, planes, page_tokens, row_bytes)
            case HostLayout.LAYER_FIRST:
                return (planes, pages, page_tokens, row_bytes)

    def kv_canonical(self, buffer: torch.Tensor) -> torch.Tensor:
        """The (H, Q, P, B) view of a buffer of `kv_shape`."""
        match self:
            case HostLayout.PAGE_FIRST:
                return buffer.permute(0, 2, 1, 3)
            case HostLayout.PAGE_FIRST_DIRECT:
                return buffer
            case HostLayout.LAYER_FIRST:
                return buffer.permute(1, 0, 2, 3)

    def block_shape(self, units: int, planes: int, unit_bytes: int) -> tuple[int, int, int]:
        """Shape of a pool whose unit (an index-key page, a state part) is one flat block."""
        if self is HostLayout.LAYER_FIRST:
            return (planes, units, unit_bytes)
        return (units, planes, unit_bytes)

    def block_canonical(self, buffer: torch.Tensor) -> torch.Tensor:
        """The (units, planes, unit_bytes) view of a buffer of `block_shape`."""
        return buffer.transpose(0, 1) if self is HostLayout.LAYER_FIRST else buffer


def host_zeros(shape: tuple[int, ...], device: torch.device | str = "cpu") -> torch.Tensor:
    """Zeroed uint8 host memory, page-locked when CUDA is present (async copies need it).

    `device="meta"` builds the pool with shapes only and no memory: every index, size and
    shape check stays real and copies into or out of it move nothing (the simulator's
    accounting mode).
    """
    device = torch.device(device)
    pin = device.type == "cpu" and torch.cuda.is_available()
    return torch.zeros(shape, dtype=torch.uint8, device=device, pin_memory=pin)
