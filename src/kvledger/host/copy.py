"""Interleaving copies: many per-layer tensors into one page block and back, near memcpy speed.

A page_first host page interleaves the layers: token 0 of every layer, token 1 of every
layer, … (rows of B bytes). Copying layer by layer into it is a strided copy of B-byte runs,
which PyTorch's CPU copy kernel does at roughly half a memcpy. Two reinterpretations fix it,
both bitwise (bytes are moved, never interpreted as numbers):

* `interleave`: one `torch.stack(…, out=…)` over *word views* (`words`: the bytes viewed as
  float64): PyTorch's CPU cat fast path, which copies contiguous blocks with memcpy, serves
  floating dtypes only. One pass, sequential writes.
* `deinterleave`: over *row views* (`rows`: numpy arrays whose element is one opaque B-byte
  row, dtype `V<B>`), a layer's rows are gathered with one memcpy per row; pages go in
  chunks that fit in L2, so the block is read from DRAM once for all layers.

Callers build the views once (per pool, per device) and pass slices: the per-call cost is
then a few slices and one call per run. Tensors off the CPU have no row views; callers fall
back to one `copy_` per layer there.

>>> parts = [torch.full((2, 3, 8), i, dtype=torch.uint8) for i in range(4)]
>>> block = torch.empty((2, 3, 4, 8), dtype=torch.uint8)
>>> interleave([words(p) for p in parts], words(block), dim=2); block[1, 2, :, 0].tolist()
[0, 1, 2, 3]
>>> outs = [torch.zeros((2, 3, 8), dtype=torch.uint8) for _ in range(4)]
>>> deinterleave(rows(block), 2, [rows(o) for o in outs]); [int(o.sum()) for o in outs]
[0, 48, 96, 144]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

CHUNK_BYTES = 2 << 20  # host bytes per deinterleave chunk: fits a core's L2 with room

_WORDS = ((8, torch.float64), (4, torch.float32), (2, torch.float16))


def words(tensor: torch.Tensor) -> torch.Tensor:
    """A uint8 tensor's last dim viewed as the widest float word that divides it."""
    row = tensor.shape[-1]
    for size, dtype in _WORDS:
        if row % size == 0 and tensor.storage_offset() % size == 0:
            return tensor.view(dtype)
    return tensor


def rows(tensor: torch.Tensor) -> np.ndarray | None:
    """A CPU uint8 tensor as a numpy array of opaque last-dim rows; None off the CPU."""
    if tensor.device.type != "cpu":
        return None
    return tensor.numpy().view(np.dtype(("V", tensor.shape[-1])))[..., 0]


def can_interleave(source: torch.device, target: torch.device) -> bool:
    """Whether `interleave` serves a copy between these devices: both the CPU. Its speed is
    the CPU cat kernel's; on "meta" (shapes only) stack runs a Python kernel of ~1 ms while
    per-part `copy_` costs microseconds, and across devices per-part copies are as good."""
    return source.type == "cpu" and source == target


def interleave(parts: Sequence[torch.Tensor], out: torch.Tensor, dim: int) -> None:
    """out.select(dim, i) = parts[i] for every i, writing `out` in one pass (word views)."""
    torch.stack(list(parts), dim=dim, out=out)


def deinterleave(block: np.ndarray, dim: int, outs: Sequence[np.ndarray]) -> None:
    """outs[i] = block's index i along `dim`, for every i (row views; dim 0 is pages)."""
    per_page = block[0].nbytes if block.shape[0] else 1
    step = max(1, CHUNK_BYTES // per_page)
    lead = (slice(None),) * dim
    for start in range(0, block.shape[0], step):
        chunk = block[start : start + step]
        for i, out in enumerate(outs):
            np.copyto(out[start : start + step], chunk[(*lead, i)])  # views, no temporaries
