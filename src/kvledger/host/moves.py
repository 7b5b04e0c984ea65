"""Moves: one transfer's index pairs, and the prefix keys of what they carry.

The controller decides a transfer as pairs of slots: device and host token slots (whole
pages, in the same order on both sides) and device and host state slots. `kv_keys` holds one
prefix key per page carried and `state_keys` one per state (`kvledger.tree.walk.
page_prefix_keys`): what the page or state *is*, so digests can be tied to it. Keys are
empty when nothing verifies the bytes (accounting mode).

>>> import numpy as np
>>> pages = np.arange(4, dtype=np.int64)
>>> m = Moves(pages, pages + 8, pages[:1], pages[:1] + 3)
>>> m.kv_host.tolist(), m.kv_keys
([8, 9, 10, 11], ())
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Moves(NamedTuple):
    """One transfer's pairs: device and host token slots, device and host state slots."""

    kv_device: np.ndarray
    kv_host: np.ndarray
    state_device: np.ndarray
    state_host: np.ndarray
    kv_keys: tuple[bytes, ...] = ()  # prefix key of each page carried, in order
    state_keys: tuple[bytes, ...] = ()  # prefix key of each state carried
