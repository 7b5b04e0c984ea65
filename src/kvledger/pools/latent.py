"""LatentKVPool: MLA's one latent row per token slot per full layer (no separate K and V).

`kv_buffer[layer]` has one row per token slot, T + P rows (page 0 is padding). The row
follows `LatentRowSpec.layout`:

    BF16        (slots, rank + rope) bfloat16
    FP8_RAW     (slots, rank + rope) uint8: e4m3 codes, no scales
    FP8_SCALED  (slots, rank + rank/128·4 + rope·2) uint8:
                [ rank e4m3 codes | rank/128 float32 scales | rope bfloat16 ]

The scaled layout is SGLang's DSA row (layers/attention/nsa/quant_k_cache.py: codes, then
the per-128 scales, then the RoPE part kept in bf16): 528 B for GLM-5.3-Flash (rope 0) and
656 B for DeepSeek-V3.2 (rope 64). SGLang's buffers carry a head axis of 1
((size + page_size, 1, kv_cache_dim)); ours drop it. Reads return float32.

>>> from kvledger.sglang.specs import LatentRowSpec, RowLayout
>>> spec = LatentRowSpec(kv_lora_rank=512, qk_rope_head_dim=0, layout=RowLayout.FP8_SCALED)
>>> pool = LatentKVPool(spec=spec, num_layers=11, num_token_slots=128, device="cpu")
>>> pool.kv_buffer[0].shape, pool.kv_buffer[0].dtype, pool.allocated_bytes == 11 * 128 * 528
(torch.Size([128, 528]), torch.uint8, True)
"""

from __future__ import annotations

import torch

from kvledger.pools.errors import IntegrityError
from kvledger.pools.fp8 import (
    as_bytes,
    dequantize_raw,
    dequantize_scaled,
    from_bytes,
    quantize_raw,
    quantize_scaled,
)
from kvledger.pools.indices import IndexLike, as_index, check_layer, check_rows
from kvledger.sglang.specs import FP8_SCALE_BYTES, FP8_SCALE_GROUP, LatentRowSpec, RowLayout


class LatentKVPool:
    def __init__(self, *, spec: LatentRowSpec, num_layers: int, num_token_slots: int,
                 device: torch.device | str) -> None:
        self.spec = spec
        self.device = torch.device(device)
        self.num_layers = num_layers
        self.num_token_slots = num_token_slots
        self.kv_buffer = [
            torch.zeros((num_token_slots, self.row_width), dtype=self.storage_dtype,
                        device=self.device)
            for _ in range(num_layers)
        ]

    @property
    def latent_dim(self) -> int:
        return self.spec.kv_lora_rank + self.spec.qk_rope_head_dim

    @property
    def storage_dtype(self) -> torch.dtype:
        return torch.bfloat16 if self.spec.layout is RowLayout.BF16 else torch.uint8

    @property
    def row_width(self) -> int:
        """Elements of one stored row (bytes for the uint8 layouts)."""
        itemsize = 2 if self.spec.layout is RowLayout.BF16 else 1
        return self.spec.row_bytes // itemsize

    @property
    def allocated_bytes(self) -> int:
        return sum(buf.nbytes for buf in self.kv_buffer)

    def encode(self, latent: torch.Tensor) -> torch.Tensor:
        """(n, rank + rope) values → (n, row_width) rows in the storage layout."""
        check_rows(latent, latent.shape[0], (self.latent_dim,), "latent rows")
        rank = self.spec.kv_lora_rank
        match self.spec.layout:
            case RowLayout.BF16:
                return latent.to(torch.bfloat16)
            case RowLayout.FP8_RAW:
                return quantize_raw(latent)
            case RowLayout.FP8_SCALED:
                codes, scale = quantize_scaled(latent[:, :rank])
                rope = latent[:, rank:].to(torch.bfloat16)
                return torch.cat([codes, as_bytes(scale), as_bytes(rope)], dim=1)

    def decode(self, rows: torch.Tensor) -> torch.Tensor:
        """(n, row_width) stored rows → (n, rank + rope) float32."""
        rank = self.spec.kv_lora_rank
        match self.spec.layout:
            case RowLayout.BF16:
                return rows.float()
            case RowLayout.FP8_RAW:
                return dequantize_raw(rows)
            case RowLayout.FP8_SCALED:
                scales_end = rank + rank // FP8_SCALE_GROUP * FP8_SCALE_BYTES
                scale = from_bytes(rows[:, rank:scales_end], torch.float32)
                latent = dequantize_scaled(rows[:, :rank], scale)
                rope = from_bytes(rows[:, scales_end:], torch.bfloat16).float()
                return torch.cat([latent, rope], dim=1)

    def set_rows(self, layer: int, token_locs: IndexLike, latent: torch.Tensor) -> None:
        """Store (n, rank + rope) latent rows at n token slots of dense full layer `layer`."""
        buf = self.kv_buffer[check_layer(layer, self.num_layers, "full")]
        locs = as_index(token_locs, size=self.num_token_slots, what="token slot", device=self.device)
        check_rows(latent, locs.numel(), (self.latent_dim,), "latent rows")
        buf[locs] = self.encode(latent.to(self.device))

    def get_rows(self, layer: int, token_locs: IndexLike) -> torch.Tensor:
        """The latent rows at these token slots, decoded to float32."""
        buf = self.kv_buffer[check_layer(layer, self.num_layers, "full")]
        locs = as_index(token_locs, size=self.num_token_slots, what="token slot", device=self.device)
        return self.decode(buf[locs])

    def check_integrity(self) -> None:
        want = (self.num_token_slots, self.row_width)
        for i, buf in enumerate(self.kv_buffer):
            if tuple(buf.shape) != want or buf.dtype != self.storage_dtype:
                raise IntegrityError(f"kv_buffer[{i}] is {tuple(buf.shape)} {buf.dtype}, want {want}")
        if len(self.kv_buffer) != self.num_layers:
            raise IntegrityError(f"{len(self.kv_buffer)} kv buffers for {self.num_layers} layers")
