"""Checking what callers hand the tree: token ids, slot index arrays and single slots.

Numpy int64 arrays pass through without a copy; other integer arrays and lists are
converted once. Anything else fails here with the argument's name, not deep in a walk.

>>> as_token_array([3, 1, 4], "tokens").dtype
dtype('int64')
>>> as_token_array(np.zeros((2, 2), dtype=np.int32), "tokens")
Traceback (most recent call last):
...
ValueError: tokens: expected a 1-D sequence of integer token ids, got shape (2, 2)
"""

from __future__ import annotations

import numpy as np

from kvledger.tree.node import INDEX_DTYPE, TOKEN_DTYPE


def _as_int_array(values: object, field: str, what: str) -> np.ndarray:
    if (
        type(values) is np.ndarray
        and values.dtype == TOKEN_DTYPE
        and values.ndim == 1
        and values.flags.c_contiguous
    ):
        return values  # the common case, checked in the cheapest order
    if isinstance(values, np.ndarray):
        array = values
    else:
        try:
            array = np.asarray(values)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{field}: expected a 1-D sequence of integer {what}") from exc
        if array.size == 0:
            array = array.astype(TOKEN_DTYPE)
    if array.ndim != 1:
        raise ValueError(
            f"{field}: expected a 1-D sequence of integer {what}, got shape {array.shape}"
        )
    if array.dtype.kind not in "iu":
        raise ValueError(f"{field}: expected integer {what}, got dtype {array.dtype}")
    return np.ascontiguousarray(array, dtype=TOKEN_DTYPE)


def as_token_array(tokens: object, field: str) -> np.ndarray:
    return _as_int_array(tokens, field, "token ids")


def as_index_array(indices: object, field: str, num_tokens: int) -> np.ndarray:
    array = _as_int_array(indices, field, "slot indices").astype(INDEX_DTYPE, copy=False)
    if len(array) != num_tokens:
        raise ValueError(f"{field}: expected one slot per token ({num_tokens}), got {len(array)}")
    return array


def as_slot(slot: object, field: str) -> int:
    """One state or host slot index: a non-negative Python or numpy integer."""
    if isinstance(slot, bool) or not isinstance(slot, int | np.integer):
        raise ValueError(f"{field}: expected one integer slot index, got {slot!r}")
    if slot < 0:
        raise ValueError(f"{field}: slot index must be >= 0, got {slot}")
    return int(slot)


def readonly(array: np.ndarray) -> np.ndarray:
    """Freeze an array the tree stores, so views handed out cannot corrupt it."""
    array.flags.writeable = False
    return array
