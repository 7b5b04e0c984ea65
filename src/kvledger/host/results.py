"""What the host-tier controller's operations return.

A loadback always describes the prefix the request can use *now* — on success the whole
best match, on failure the device part of the match only (the request recomputes the rest):

    tokens   |======== device ========|~~~~~~ host ~~~~~~|
             root             last_device_node      best_match_node
    LOADED / DEVICE_HIT: node = best_match_node, device_indices cover both parts
    NO_ROOM / FAILED:    node = last_device_node, device_indices cover the device part
    QUEUED:              node = last_device_node until the transfer is acknowledged

>>> LoadStatus.LOADED.usable, LoadStatus.FAILED.usable
(True, False)
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from kvledger.tree import Node


class BackupOutcome(Enum):
    BACKED_UP = "backed up"  # copied and recorded on host
    QUEUED = "queued"  # submitted; recorded when acknowledged
    ALREADY = "already on host"  # nothing was missing
    NOT_DUE = "not due"  # the policy does not back this node up (yet)
    HOST_FULL = "skipped: host full"  # even after host LRU eviction there was no room
    FAILED = "transfer failed"  # aborted midway; nothing recorded, everything freed


class LoadStatus(Enum):
    DEVICE_HIT = "already on device"
    LOADED = "loaded back"
    QUEUED = "queued"
    NO_ROOM = "no device room: recompute"
    FAILED = "transfer failed: recompute"

    @property
    def usable(self) -> bool:
        """Whether the best match itself can be used now."""
        return self in (LoadStatus.DEVICE_HIT, LoadStatus.LOADED)


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadbackResult:
    status: LoadStatus
    node: Node  # deepest node whose KV and state the request can use now
    device_indices: np.ndarray  # device token slots, root to `node`
    mamba_slot: int | None  # device state slot of `node` (copy source; None at the root)
    loaded_tokens: int  # KV tokens copied host → device (0 unless LOADED)
    loaded_state: bool  # whether `node`'s state came from host
    request_slot: int | None  # the request's own slot the state was copied into, if any

    @property
    def hit_tokens(self) -> int:
        return len(self.device_indices)
