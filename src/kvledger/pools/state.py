"""MambaPool: the recurrent state of every linear-attention layer, one slot per checkpoint.

Two tensors, layer-major like SGLang's MambaPool (mem_cache/memory_pool.py: conv and
temporal of `(num_mamba_layers, size + 1, *shape)`):

    conv      (layers, K + 1, K_conv − 1, channels)   bfloat16
    temporal  (layers, K + 1, heads, d_k, d_v)        mamba_ssm_dtype (float32 by default)

Slot 0 is NULL_SLOT, the padding slot of padded batches; slots 1..K are handed out by a
StateSlotAllocator. `layer_state(l)` gives a layer's contiguous `(K + 1, …)` tensors, the shape
kernels take. `copy_slot` is the copy-on-write of a prefix-cache checkpoint into a request's
own slot: one strided copy per tensor, not a Python loop over layers.

>>> from kvledger.sglang.specs import StateSpec
>>> spec = StateSpec(conv_shape=(3, 24), conv_itemsize=2, temporal_shape=(2, 4, 4),
...                  temporal_itemsize=4)
>>> pool = MambaPool(spec=spec, num_layers=3, num_slots=5, conv_dtype=torch.bfloat16,
...                  temporal_dtype=torch.float32, device="cpu")
>>> pool.temporal.shape, pool.allocated_bytes == 5 * 3 * spec.bytes_per_layer
(torch.Size([3, 5, 2, 4, 4]), True)
"""

from __future__ import annotations

import torch

from kvledger.pools.errors import IntegrityError
from kvledger.pools.indices import IndexLike, as_index, check_layer, check_rows
from kvledger.sglang.specs import StateSpec


class MambaPool:
    def __init__(self, *, spec: StateSpec, num_layers: int, num_slots: int,
                 conv_dtype: torch.dtype, temporal_dtype: torch.dtype,
                 device: torch.device | str) -> None:
        """`num_slots` counts every slot of the tensors, NULL_SLOT included (K + 1)."""
        for name, dtype, itemsize in (("conv", conv_dtype, spec.conv_itemsize),
                                      ("temporal", temporal_dtype, spec.temporal_itemsize)):
            if dtype.itemsize != itemsize:
                raise ValueError(f"{name} state dtype {dtype} is {dtype.itemsize} B, spec says {itemsize}")
        self.spec = spec
        self.device = torch.device(device)
        self.num_layers = num_layers
        self.num_slots = num_slots
        self.conv = torch.zeros((num_layers, num_slots, *spec.conv_shape), dtype=conv_dtype,
                                device=self.device)
        self.temporal = torch.zeros((num_layers, num_slots, *spec.temporal_shape),
                                    dtype=temporal_dtype, device=self.device)

    @property
    def conv_bytes(self) -> int:
        return self.conv.nbytes

    @property
    def temporal_bytes(self) -> int:
        return self.temporal.nbytes

    @property
    def allocated_bytes(self) -> int:
        return self.conv.nbytes + self.temporal.nbytes

    def layer_state(self, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(conv, temporal) of dense linear layer `layer`: contiguous (K + 1, …) views."""
        check_layer(layer, self.num_layers, "linear")
        return self.conv[layer], self.temporal[layer]

    def read(self, layer: int, slots: IndexLike) -> tuple[torch.Tensor, torch.Tensor]:
        """Copies of the (conv, temporal) state of these slots in one layer."""
        conv, temporal = self.layer_state(layer)
        idx = self._slots(slots)
        return conv[idx], temporal[idx]

    def write(self, layer: int, slots: IndexLike, conv: torch.Tensor, temporal: torch.Tensor) -> None:
        """Store the (conv, temporal) state of n slots in one layer."""
        conv_buf, temporal_buf = self.layer_state(layer)
        idx = self._slots(slots)
        check_rows(conv, idx.numel(), self.spec.conv_shape, "conv state")
        check_rows(temporal, idx.numel(), self.spec.temporal_shape, "temporal state")
        conv_buf[idx] = conv.to(self.device, conv_buf.dtype)
        temporal_buf[idx] = temporal.to(self.device, temporal_buf.dtype)

    def copy_slot(self, src: IndexLike, dst: IndexLike) -> None:
        """Copy every layer's state of slot(s) `src` into slot(s) `dst` (equal lengths).

        Batched copies gather all sources before writing, so overlapping src/dst behave as
        simultaneous copies; a destination may appear only once.
        """
        if isinstance(src, int) and isinstance(dst, int):
            self._slots([src, dst])
            if src != dst:
                self.conv[:, dst].copy_(self.conv[:, src])
                self.temporal[:, dst].copy_(self.temporal[:, src])
            return
        src_idx, dst_idx = self._slots(src), self._slots(dst)
        if src_idx.numel() != dst_idx.numel():
            raise ValueError(f"copy_slot: {src_idx.numel()} sources for {dst_idx.numel()} destinations")
        if torch.unique(dst_idx).numel() != dst_idx.numel():
            raise ValueError("copy_slot: a destination slot appears twice")
        self.conv[:, dst_idx] = self.conv[:, src_idx]
        self.temporal[:, dst_idx] = self.temporal[:, src_idx]

    def clear_slot(self, slots: IndexLike) -> None:
        """Zero the state of these slots in every layer (a fresh request starts from zero)."""
        idx = self._slots(slots)
        self.conv[:, idx] = 0
        self.temporal[:, idx] = 0

    def check_integrity(self) -> None:
        want_conv = (self.num_layers, self.num_slots, *self.spec.conv_shape)
        want_temporal = (self.num_layers, self.num_slots, *self.spec.temporal_shape)
        if tuple(self.conv.shape) != want_conv or tuple(self.temporal.shape) != want_temporal:
            raise IntegrityError(
                f"state tensors {tuple(self.conv.shape)} / {tuple(self.temporal.shape)}, want "
                f"{want_conv} / {want_temporal}"
            )

    def _slots(self, slots: IndexLike) -> torch.Tensor:
        return as_index(slots, size=self.num_slots, what="state slot", device=self.device)
