"""GqaKVPool: separate K and V buffers per full layer, `(slots, kv_heads_per_rank, head_dim)`.

Like SGLang's MHATokenToKVPool (k_buffer / v_buffer of (size + page_size, head_num,
head_dim)). bf16 is stored as bfloat16; fp8 as uint8 e4m3 codes with no scale (SGLang's
per-tensor k_scale/v_scale from a checkpoint is a model constant, not cache memory).
Reads return float32.

>>> from kvledger.sglang.specs import GqaRowSpec
>>> pool = GqaKVPool(spec=GqaRowSpec(kv_heads_per_rank=8, head_dim=128, itemsize=2),
...                  num_layers=32, num_token_slots=16, device="cpu")
>>> pool.k_buffer[0].shape, pool.allocated_bytes == 16 * 32 * 4096
(torch.Size([16, 8, 128]), True)
"""

from __future__ import annotations

import torch

from kvledger.pools.errors import IntegrityError
from kvledger.pools.fp8 import dequantize_raw, quantize_raw
from kvledger.pools.indices import IndexLike, as_index, check_layer, check_rows
from kvledger.sglang.specs import GqaRowSpec

_STORAGE = {2: torch.bfloat16, 1: torch.uint8}  # itemsize → storage dtype


class GqaKVPool:
    def __init__(self, *, spec: GqaRowSpec, num_layers: int, num_token_slots: int,
                 device: torch.device | str) -> None:
        if spec.itemsize not in _STORAGE:
            raise ValueError(f"GQA KV of {spec.itemsize} B per element: expected 2 (bf16) or 1 (fp8)")
        self.spec = spec
        self.device = torch.device(device)
        self.num_layers = num_layers
        self.num_token_slots = num_token_slots
        shape = self.buffer_shape
        dtype = _STORAGE[spec.itemsize]
        self.k_buffer = [torch.zeros(shape, dtype=dtype, device=self.device) for _ in range(num_layers)]
        self.v_buffer = [torch.zeros(shape, dtype=dtype, device=self.device) for _ in range(num_layers)]

    @property
    def buffer_shape(self) -> tuple[int, int, int]:
        return (self.num_token_slots, self.spec.kv_heads_per_rank, self.spec.head_dim)

    @property
    def allocated_bytes(self) -> int:
        return sum(b.nbytes for b in self.k_buffer) + sum(b.nbytes for b in self.v_buffer)

    def set_kv(self, layer: int, token_locs: IndexLike, k: torch.Tensor, v: torch.Tensor) -> None:
        """Store (n, heads, head_dim) keys and values at n token slots of dense layer `layer`."""
        check_layer(layer, self.num_layers, "full")
        locs = as_index(token_locs, size=self.num_token_slots, what="token slot", device=self.device)
        for name, values, buf in (("keys", k, self.k_buffer), ("values", v, self.v_buffer)):
            check_rows(values, locs.numel(), self.buffer_shape[1:], name)
            buf[layer][locs] = self._encode(values.to(self.device))

    def get_kv(self, layer: int, token_locs: IndexLike) -> tuple[torch.Tensor, torch.Tensor]:
        check_layer(layer, self.num_layers, "full")
        locs = as_index(token_locs, size=self.num_token_slots, what="token slot", device=self.device)
        return self._decode(self.k_buffer[layer][locs]), self._decode(self.v_buffer[layer][locs])

    def check_integrity(self) -> None:
        for buf in (*self.k_buffer, *self.v_buffer):
            if tuple(buf.shape) != self.buffer_shape:
                raise IntegrityError(f"GQA buffer is {tuple(buf.shape)}, want {self.buffer_shape}")
        if len(self.k_buffer) != self.num_layers or len(self.v_buffer) != self.num_layers:
            raise IntegrityError("GQA pool: one K and one V buffer per full layer")

    def _encode(self, x: torch.Tensor) -> torch.Tensor:
        return x.to(torch.bfloat16) if self.spec.itemsize == 2 else quantize_raw(x)

    def _decode(self, stored: torch.Tensor) -> torch.Tensor:
        return stored.float() if self.spec.itemsize == 2 else dequantize_raw(stored)
