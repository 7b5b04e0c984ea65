"""IndexKeyCache: DSA indexer keys, fp8 with a float32 scale per 128, stored page by page.

Per indexer layer one uint8 buffer `(num_pages, page_bytes)`. A page holds `keys_per_page`
key slots: all their fp8 key bytes first, then all their scale bytes (SGLang
mem_cache/memory_pool.py, NSATokenToKVPool.index_k_with_scale_buffer: "buf[i, :page_size *
head_dim] for fp8 data, buf[i, page_size * head_dim:].view(float32) for scale").

    page i: [ key 0 (128 B) | key 1 | … | key 63 | scale 0 (4 B) | … | scale 63 | padding ]

Page geometry comes from the spec, which the rule set filled in:
- sglang-0.5.21: 64-token page, 132 B reserved per token → 64 key slots, one per token slot;
  with kpool 4 only one pooled key per 4 tokens is written (the rest stay reserved);
- sglang-0.5.23: 64·kpool-token page, ⌈132/kpool⌉ B per token → 64 key slots, one per kpool
  tokens.
Token slot `loc` maps to key slot `loc // tokens_per_key_slot`; the pooled key of a kpool group
goes to the key slot of the group's first token (`group_key_locs`), which stays inside the
page because pages hold whole groups and requests fill pages from offset 0.

>>> from kvledger.sglang.specs import IndexKeySpec
>>> spec = IndexKeySpec(head_dim=128, kpool=4, reserved_bytes=33, page_tokens=256)
>>> cache = IndexKeyCache(spec=spec, num_layers=11, num_pages=2, device="cpu")
>>> cache.buffers[0].shape, cache.keys_per_page, cache.tokens_per_key_slot
(torch.Size([2, 8448]), 64, 4)
>>> cache.group_key_locs([256, 257, 260, 511]).tolist()
[64, 64, 65, 127]
"""

from __future__ import annotations

import torch

from kvledger.pools.errors import IntegrityError
from kvledger.pools.fp8 import dequantize_scaled, quantize_scaled
from kvledger.pools.indices import IndexLike, as_index, check_layer, check_rows
from kvledger.sglang.specs import IndexKeySpec


class IndexKeyCache:
    def __init__(self, *, spec: IndexKeySpec, num_layers: int, num_pages: int,
                 device: torch.device | str, elided: tuple[bool, ...] | None = None) -> None:
        """`elided`: per layer, True for a layer whose buffer has no rows (SGLang gives the
        shared-top-k layers of GLM-5.2 a 0-row index-K buffer when `_should_elide_dsa_index_k`
        holds; they write no keys)."""
        self.spec = spec
        self.elided = elided or (False,) * num_layers
        if len(self.elided) != num_layers:
            raise ValueError(f"elided: {len(self.elided)} flags for {num_layers} layers")
        self.device = torch.device(device)
        self.num_layers = num_layers
        self.num_pages = num_pages
        if spec.page_tokens % self.tokens_per_key_slot:
            raise ValueError(f"a {spec.page_tokens}-token page does not hold whole kpool groups")
        if self.keys_per_page * spec.row_bytes > spec.page_bytes:
            raise ValueError(f"{self.keys_per_page} keys of {spec.row_bytes} B exceed a page")
        self.buffers = [
            torch.zeros((0 if gone else num_pages, spec.page_bytes), dtype=torch.uint8,
                        device=self.device)
            for gone in self.elided
        ]

    @property
    def tokens_per_key_slot(self) -> int:
        """1 when every token reserves a whole key row, kpool when a row is shared by a group."""
        return 1 if self.spec.reserved_bytes >= self.spec.row_bytes else self.spec.kpool

    @property
    def keys_per_page(self) -> int:
        return self.spec.page_tokens // self.tokens_per_key_slot

    @property
    def num_key_slots(self) -> int:
        return self.num_pages * self.keys_per_page

    @property
    def allocated_bytes(self) -> int:
        return sum(buf.nbytes for buf in self.buffers)

    def key_locs(self, token_locs: IndexLike) -> torch.Tensor:
        """Key slot of each token slot."""
        locs = as_index(token_locs, size=self.num_pages * self.spec.page_tokens,
                        what="token slot", device=self.device)
        return locs // self.tokens_per_key_slot

    def group_key_locs(self, token_locs: IndexLike) -> torch.Tensor:
        """Key slot holding the pooled key of each token's kpool group."""
        locs = as_index(token_locs, size=self.num_pages * self.spec.page_tokens,
                        what="token slot", device=self.device)
        return (locs - locs % self.spec.kpool) // self.tokens_per_key_slot

    def set_keys(self, layer: int, key_locs: IndexLike, keys: torch.Tensor) -> None:
        """Quantise (n, head_dim) keys and store codes and scales at n key slots."""
        codes, scale = quantize_scaled(keys.to(self.device))
        self.set_raw(layer, key_locs, codes, scale)

    def set_raw(self, layer: int, key_locs: IndexLike, codes: torch.Tensor,
                scale: torch.Tensor) -> None:
        """Store already-quantised uint8 codes (n, head_dim) and float32 scales (n, head_dim/128)."""
        page, slot = self._split(key_locs)
        keys, scales = self._views(layer)
        check_rows(codes, page.numel(), (self.spec.head_dim,), "index key codes")
        check_rows(scale, page.numel(), (self.spec.scale_bytes // 4,), "index key scales")
        keys[page, slot] = codes.to(torch.uint8)
        scales[page, slot] = scale.to(torch.float32).contiguous().view(torch.uint8)

    def get_raw(self, layer: int, key_locs: IndexLike) -> tuple[torch.Tensor, torch.Tensor]:
        """(uint8 codes (n, head_dim), float32 scales (n, head_dim/128)) at n key slots."""
        page, slot = self._split(key_locs)
        keys, scales = self._views(layer)
        return keys[page, slot], scales[page, slot].view(torch.float32)

    def get_keys(self, layer: int, key_locs: IndexLike) -> torch.Tensor:
        """Dequantised float32 keys (n, head_dim)."""
        return dequantize_scaled(*self.get_raw(layer, key_locs))

    def check_integrity(self) -> None:
        if len(self.buffers) != self.num_layers:
            raise IntegrityError(f"{len(self.buffers)} index buffers for {self.num_layers} layers")
        for i, buf in enumerate(self.buffers):
            want = (0 if self.elided[i] else self.num_pages, self.spec.page_bytes)
            if tuple(buf.shape) != want or buf.dtype != torch.uint8:
                raise IntegrityError(f"index buffer {i} is {tuple(buf.shape)} {buf.dtype}, want {want}")

    def _split(self, key_locs: IndexLike) -> tuple[torch.Tensor, torch.Tensor]:
        locs = as_index(key_locs, size=self.num_key_slots, what="key slot", device=self.device)
        return locs // self.keys_per_page, locs % self.keys_per_page

    def _views(self, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(pages, keys_per_page, key_bytes) and (pages, keys_per_page, scale_bytes) views."""
        buf = self.buffers[check_layer(layer, self.num_layers, "indexer")]
        n, key_b, scale_b = self.keys_per_page, self.spec.key_bytes, self.spec.scale_bytes
        keys = buf[:, : n * key_b].unflatten(1, (n, key_b))
        scales = buf[:, n * key_b : n * (key_b + scale_b)].unflatten(1, (n, scale_b))
        return keys, scales
