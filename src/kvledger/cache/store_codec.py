"""PageCodec: one device page or state slot as the bytes of one store object.

A page object holds, for device page p (token slots p·P .. p·P + P − 1), every KV plane's P
rows (one latent plane per full layer, or K then V for GQA), then every full layer's
index-key page p: the page's whole footprint except the state, which only a group's last
page carries, as its own object (every linear layer's conv state, then every linear
layer's temporal state). The codec reads through the uint8 views the host tier copies
(`kvledger.host.device.DeviceBytes`), so it is dtype-blind; `layout` names every size that
must agree between two instances sharing objects.

>>> from kvledger.engine.config import TinyConfig
>>> from kvledger.engine.memory import PoolSizes, build_device_pools
>>> pools = build_device_pools(TinyConfig(), PoolSizes(num_pages=4, page_tokens=16))
>>> codec = PageCodec.of(pools.kv, page_tokens=16)
>>> codec.page_bytes  # 2 full layers × 16 rows × 132 B + 2 index-key pages × 2,112 B
8448
>>> codec.state_bytes  # 6 linear layers × (576 B conv + 2,048 B temporal)
15744
>>> codec.layout
'p16-kv2x132-ix2x2112-st6x576+2048'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from kvledger.host.device import DeviceBytes
from kvledger.pools.hybrid import HybridLinearKVPool


@dataclass(frozen=True, slots=True)
class PageCodec:
    dev: DeviceBytes

    @classmethod
    def of(cls, kv: HybridLinearKVPool, *, page_tokens: int) -> PageCodec:
        if kv.mamba_pool is None:
            raise ValueError("PageCodec: the pools have no state pool")
        return cls(DeviceBytes.of(kv.full_kv_pool, kv.mamba_pool, page_tokens=page_tokens))

    @property
    def page_tokens(self) -> int:
        return self.dev.page_tokens

    @property
    def kv_page_bytes(self) -> int:
        return len(self.dev.kv_planes) * self.page_tokens * self.dev.row_bytes

    @property
    def page_bytes(self) -> int:
        return self.kv_page_bytes + len(self.dev.index_pages) * self.dev.index_page_bytes

    @property
    def state_bytes(self) -> int:
        conv, temporal = self.dev.state_part_bytes
        assert self.dev.conv is not None
        return self.dev.conv.shape[0] * (conv + temporal)

    @property
    def layout(self) -> str:
        d = self.dev
        conv, temporal = d.state_part_bytes
        assert d.conv is not None
        return (f"p{self.page_tokens}-kv{len(d.kv_planes)}x{d.row_bytes}"
                f"-ix{len(d.index_pages)}x{d.index_page_bytes}"
                f"-st{d.conv.shape[0]}x{conv}+{temporal}")

    def read_pages(self, pages: np.ndarray) -> list[memoryview]:
        """Copies of device pages `pages` (page ids), one object each."""
        n, d = len(pages), self.dev
        out = np.empty((n, self.page_bytes), dtype=np.uint8)
        idx = torch.from_numpy(np.asarray(pages, dtype=np.int64))
        span, pos = self.page_tokens * d.row_bytes, 0
        for p in range(len(d.kv_planes)):
            out[:, pos:pos + span] = d.kv_page_view(p)[idx].reshape(n, span).numpy()
            pos += span
        for index in d.index_pages:
            out[:, pos:pos + d.index_page_bytes] = index[idx].numpy()
            pos += d.index_page_bytes
        return [memoryview(row) for row in out]

    def write_pages(self, pages: np.ndarray, payloads: Sequence[bytes]) -> None:
        d = self.dev
        if len(payloads) != len(pages) or any(len(p) != self.page_bytes for p in payloads):
            raise ValueError(f"write_pages: {len(payloads)} payloads for {len(pages)} pages "
                             f"of {self.page_bytes} B each")
        staged = np.empty((len(pages), self.page_bytes), dtype=np.uint8)
        for row, payload in zip(staged, payloads, strict=True):
            row[:] = np.frombuffer(payload, dtype=np.uint8)
        src = torch.from_numpy(staged)
        idx = torch.from_numpy(np.asarray(pages, dtype=np.int64))
        span, pos = self.page_tokens * d.row_bytes, 0
        for p in range(len(d.kv_planes)):
            d.kv_page_view(p)[idx] = src[:, pos:pos + span].reshape(
                len(pages), self.page_tokens, d.row_bytes)
            pos += span
        for index in d.index_pages:
            index[idx] = src[:, pos:pos + d.index_page_bytes]
            pos += d.index_page_bytes

    def read_state(self, slot: int) -> memoryview:
        d = self.dev
        assert d.conv is not None and d.temporal is not None
        parts = [d.conv[:, slot].reshape(-1), d.temporal[:, slot].reshape(-1)]
        return memoryview(torch.cat(parts).numpy())

    def write_state(self, slot: int, payload: bytes) -> None:
        d = self.dev
        assert d.conv is not None and d.temporal is not None
        if len(payload) != self.state_bytes:
            raise ValueError(f"write_state: {len(payload)} B, expected {self.state_bytes}")
        src = torch.from_numpy(np.frombuffer(payload, dtype=np.uint8).copy())
        split = d.conv.shape[0] * d.conv.shape[2]
        d.conv[:, slot] = src[:split].view(d.conv.shape[0], d.conv.shape[2])
        d.temporal[:, slot] = src[split:].view(d.temporal.shape[0], d.temporal.shape[2])
