"""Movers: what carries a transfer's bytes — the host pools' tensor copies, or nothing.

The controller decides every transfer (which pages and state slots, in which direction,
when) and hands its pairs to a mover; the mover only carries bytes. `TensorMover` copies
through the host pools (`HostPoolGroup.backup` / `.loadback`), calling `checkpoint` after
each run so a fault hook can fail a transfer midway. `IndexOnlyMover` is the null object of
accounting mode (the simulator, pools on "meta"): it checks that the pairs line up — as many
host as device slots, whole pages — and moves nothing, in one step.

>>> import numpy as np
>>> from kvledger.host.moves import Moves
>>> pages = np.arange(4, dtype=np.int64)
>>> IndexOnlyMover(page_tokens=2).backup(Moves(pages, pages + 8, pages[:1], pages[:1]),
...                                      checkpoint=lambda: None)
>>> IndexOnlyMover(page_tokens=2).loadback(Moves(pages, pages[:3], pages[:0], pages[:0]),
...                                        checkpoint=lambda: None)
Traceback (most recent call last):
...
AssertionError: 3 host KV slots for 4 device slots
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from kvledger.host.device import DeviceBytes
from kvledger.host.group import HostPoolGroup
from kvledger.host.kv_pool import Checkpoint
from kvledger.host.moves import Moves


class Mover(ABC):
    moves_bytes = True  # False for a mover that carries indices only (nothing to verify)

    @abstractmethod
    def backup(self, moves: Moves, checkpoint: Checkpoint) -> None:
        """Carry device → host; `checkpoint()` after each copy step (it may raise a fault)."""

    @abstractmethod
    def loadback(self, moves: Moves, checkpoint: Checkpoint) -> None:
        """Carry host → device, likewise."""


class TensorMover(Mover):
    """Byte copies between one rank's device pools and its host pools."""

    def __init__(self, device: DeviceBytes, host: HostPoolGroup) -> None:
        self.device, self.host = device, host

    def backup(self, moves: Moves, checkpoint: Checkpoint) -> None:
        self.host.backup(self.device, kv_device=moves.kv_device, kv_host=moves.kv_host,
                         state_device=moves.state_device, state_host=moves.state_host,
                         checkpoint=checkpoint)

    def loadback(self, moves: Moves, checkpoint: Checkpoint) -> None:
        self.host.loadback(self.device, kv_host=moves.kv_host, kv_device=moves.kv_device,
                           state_host=moves.state_host, state_device=moves.state_device,
                           checkpoint=checkpoint)


class IndexOnlyMover(Mover):
    """Accounting mode: every transfer is decided and recorded, no byte moves."""

    moves_bytes = False

    def __init__(self, *, page_tokens: int) -> None:
        self.page_tokens = page_tokens

    def _check(self, moves: Moves) -> None:
        num_kv = len(moves.kv_device)
        assert len(moves.kv_host) == num_kv, (
            f"{len(moves.kv_host)} host KV slots for {num_kv} device slots")
        assert num_kv % self.page_tokens == 0, f"{num_kv} KV slots are not whole pages"
        assert len(moves.state_host) == len(moves.state_device), (
            f"{len(moves.state_host)} host state slots for {len(moves.state_device)} device ones")

    def backup(self, moves: Moves, checkpoint: Checkpoint) -> None:
        self._check(moves)
        checkpoint()

    def loadback(self, moves: Moves, checkpoint: Checkpoint) -> None:
        self._check(moves)
        checkpoint()

