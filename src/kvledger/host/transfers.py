"""Transfers: the one object backup, loadback and write-back act on.

It owns what every transfer shares: the tree and both tiers' allocators, the queue that runs
copies, the mover that carries bytes, the digests that verify them, the traffic counters and
the register of transfers in flight. Each in-flight transfer is a `Flight`: the lock
receipts it holds and the host or device slots it allocated and the tree does not reference
yet. The register is what `check_integrity` cross-checks (every receipt of the tree has an
owner, the in-flight counters equal the sum of the flights); `submit` releases a flight's
receipts and counters once it is acknowledged, whatever the acknowledgement raised.

The controller (`kvledger.host.controller`) keeps policy and routing on top: what is due
for backup, where eviction goes, how device room is made.

    controller ──► backup / loadback / write_back ──► Transfers ──► TransferQueue ──► Mover
                    (decide pairs, commit or free)     (locks, counters, verify)      (bytes)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from kvledger.host.device import DeviceSide
from kvledger.host.digests import PrefixDigests
from kvledger.host.group import HostPoolGroup
from kvledger.host.movers import Mover, TensorMover
from kvledger.host.moves import Moves
from kvledger.host.neighbours import NeighbourGuard
from kvledger.host.traffic import Traffic
from kvledger.host.transfer import Direction, FaultHook, Transfer, TransferQueue, VerifyFault
from kvledger.tree import Component, LockReceipt, Node, RadixTree, Tier
from kvledger.tree.walk import EMPTY


@dataclass(slots=True)
class InFlight:
    """Allocated for transfers not yet acknowledged (not yet referenced by the tree)."""

    host_tokens: int = 0
    host_state_slots: int = 0
    device_tokens: int = 0
    device_state_slots: int = 0

    def add_host(self, tokens: int, slots: int) -> None:
        self.host_tokens += tokens
        self.host_state_slots += slots
        assert self.host_tokens >= 0 and self.host_state_slots >= 0, "in-flight host < 0"

    def add_device(self, tokens: int, slots: int) -> None:
        self.device_tokens += tokens
        self.device_state_slots += slots
        assert self.device_tokens >= 0 and self.device_state_slots >= 0, "in-flight device < 0"


@dataclass(slots=True, kw_only=True)
class Flight:
    """What one in-flight transfer owns until it is acknowledged."""

    receipts: list[LockReceipt]
    host_kv: np.ndarray = field(default_factory=lambda: EMPTY)  # host token slots allocated
    host_states: np.ndarray = field(default_factory=lambda: EMPTY)
    device_kv: np.ndarray = field(default_factory=lambda: EMPTY)  # device token slots
    device_states: np.ndarray = field(default_factory=lambda: EMPTY)
    # Called once its locks are released when verification refused the transfer: the
    # owner drops the host copy that failed, so later matches do not load it again.
    on_refused: Callable[[VerifyFault], None] | None = None


class Transfers:
    def __init__(self, *, tree: RadixTree, device: DeviceSide, host: HostPoolGroup,
                 mover: Mover | None = None, synchronous: bool = True,
                 fault: FaultHook | None = None, verify: bool = True) -> None:
        self.tree, self.device, self.host = tree, device, host
        self.mover = mover if mover is not None else TensorMover(device.bytes, host)
        self.queue = TransferQueue(mover=self._move, synchronous=synchronous, fault=fault)
        # Verification needs bytes: a mover that moves none (accounting mode) has none.
        self.digests = (PrefixDigests(device.bytes, host)
                        if verify and self.mover.moves_bytes else None)
        # With the digests, the pages and slots beside a loadback's are checked unchanged.
        self.neighbours = NeighbourGuard(device.bytes) if self.digests is not None else None
        self.inflight = InFlight()
        self.traffic = Traffic()
        self.flights: dict[int, Flight] = {}  # transfer id -> what it owns
        self.refused: dict[int, VerifyFault] = {}  # transfer id -> its failed check, until acked

    @property
    def verifying(self) -> bool:
        return self.digests is not None

    def drop_host(self, node: Node, component: Component) -> bool:
        """Drop `node`'s host copy of `component` (FULL: and all below it), freeing the host
        slots; False when a host lock pins it (another transfer reads it)."""
        result = self.tree.drop_host(node, component)
        if result is None:
            return False
        self.traffic.evicted(Tier.HOST, result)
        self.host.free_kv(result.full_indices)
        self.host.free_states(result.mamba_slots)
        return True

    def release(self, receipts: list[LockReceipt]) -> None:
        """Unlock receipts taken before a transfer was submitted (a path that gave up)."""
        for receipt in receipts:
            self.tree.unlock(receipt)

    def submit(self, direction: Direction, moves: Moves, flight: Flight,
               on_ack: Callable[[bool], None]) -> Transfer:
        """Queue (or run) a transfer owning `flight`. `on_ack(ok)` commits or frees the
        allocations; the flight's locks and counters are released after it in any case."""
        num_host = (len(flight.host_kv), len(flight.host_states))
        num_device = (len(flight.device_kv), len(flight.device_states))
        self.inflight.add_host(*num_host)
        self.inflight.add_device(*num_device)
        transfer_id = self.queue.next_id
        self.flights[transfer_id] = flight

        def ack(ok: bool) -> None:
            try:
                on_ack(ok)
            finally:
                del self.flights[transfer_id]
                self.inflight.add_host(-num_host[0], -num_host[1])
                self.inflight.add_device(-num_device[0], -num_device[1])
                self.release(flight.receipts)
                refused = self.refused.pop(transfer_id, None)
            if refused is not None and flight.on_refused is not None:
                flight.on_refused(refused)  # unlocked now: the bad copy can go

        return self.queue.submit(direction, payload=moves, on_ack=ack)

    def _move(self, transfer: Transfer, checkpoint) -> None:
        moves: Moves = transfer.payload
        match transfer.direction:
            case Direction.BACKUP:
                self.mover.backup(moves, checkpoint)
                if self.digests is not None:
                    self.digests.record_backup(moves)  # the device source is locked: stable
            case Direction.LOADBACK:
                guard = self.neighbours
                before = None if guard is None else guard.snapshot(moves)
                try:
                    self.mover.loadback(moves, checkpoint)
                finally:  # a stray write is put back even when the copy raised
                    stray = None if before is None else guard.restore(before)
                if self.digests is not None:
                    try:
                        self.digests.check_loadback(moves)  # before the acknowledgement
                        if stray is not None:
                            raise VerifyFault(f"loadback wrote outside its pages: {stray}")
                    except VerifyFault as fault:
                        self.refused[transfer.transfer_id] = fault
                        raise
        self.traffic.moved(transfer.direction, num_tokens=len(moves.kv_host),
                           num_state_slots=len(moves.state_host))
