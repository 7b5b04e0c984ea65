"""Validated index tensors: every pool read and write goes through `as_index`.

Indices may arrive as a torch tensor, a numpy array (what the allocators return), a sequence
or a single int; they come out as a 1-D int64 tensor on the pool's device, range-checked in
one vectorised pass (no per-token Python).

>>> as_index([3, 1], size=4, what="token slot", device="cpu").tolist()
[3, 1]
>>> as_index(4, size=4, what="token slot", device="cpu")
Traceback (most recent call last):
...
IndexError: token slot 4 out of range 0..3
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

IndexLike = torch.Tensor | np.ndarray | Sequence[int] | int


def as_index(index: IndexLike, *, size: int, what: str, device: torch.device | str) -> torch.Tensor:
    """A 1-D int64 tensor on `device`, every entry in 0..size−1, else IndexError naming `what`."""
    if not _integer_typed(index):
        raise TypeError(f"{what} indices must be integers, got {index.dtype}")  # type: ignore[union-attr]
    out = torch.as_tensor(index, dtype=torch.int64, device=device)
    if out.dim() == 0:
        out = out.reshape(1)
    if out.dim() != 1:
        raise ValueError(f"{what} indices must be 1-D, got shape {tuple(out.shape)}")
    if out.numel() and out.device.type != "meta":
        lo, hi = torch.aminmax(out)
        if int(lo) < 0 or int(hi) >= size:
            bad = int(lo) if int(lo) < 0 else int(hi)
            raise IndexError(f"{what} {bad} out of range 0..{size - 1}")
    return out


def _integer_typed(index: IndexLike) -> bool:
    """Arrays must hold integers: a bool mask or floats would be silently reinterpreted."""
    if isinstance(index, torch.Tensor):
        return not (index.is_floating_point() or index.is_complex() or index.dtype == torch.bool)
    if isinstance(index, np.ndarray):
        return index.dtype.kind in "iu"
    return True


def check_layer(layer: int, num_layers: int, what: str) -> int:
    """A dense sub-pool layer id, range-checked."""
    if not 0 <= layer < num_layers:
        raise IndexError(f"{what} layer {layer} out of range 0..{num_layers - 1}")
    return layer


def check_rows(values: torch.Tensor, count: int, width: tuple[int, ...], what: str) -> None:
    """Values to write must be `count` rows of shape `width`."""
    if tuple(values.shape) != (count, *width):
        raise ValueError(
            f"{what}: expected values of shape {(count, *width)}, got {tuple(values.shape)}"
        )
