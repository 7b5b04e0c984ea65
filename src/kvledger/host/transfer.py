"""Transfers between tiers: a FIFO queue with acknowledgements, and a fault hook for tests.

A Transfer is one batch of pages and state slots in one direction. The queue runs it (the
copy) and then acknowledges it: `on_ack(True)` commits (the tree records host or device
values, locks are released) and `on_ack(False)` aborts (the controller frees what it had
allocated). Nothing is recorded before the acknowledgement, so a transfer that fails midway
leaves no half-written value behind.

Any exception inside a copy fails the transfer: it is acknowledged False first (locks
released, pages and slots freed, in-flight counters back), then a copy error (`COPY_ERRORS`:
an injected fault, a failed verification, a runtime/CUDA, OS or memory error) is counted and
swallowed — the request recomputes — while anything else (an assertion, a type or index
error: a programming error) is re-raised after the cleanup.

Two modes: *synchronous* runs a transfer inside `submit` (tests, the reference engine);
*queued* holds transfers until `poll`, like a copy stream the scheduler checks each step, so
locks visibly outlive `submit`.

>>> log = []
>>> q = TransferQueue(mover=lambda t, checkpoint: checkpoint(), synchronous=False)
>>> t = q.submit(Direction.BACKUP, payload=None, on_ack=log.append)
>>> q.num_pending, log
(1, [])
>>> q.poll(), log
(1, [True])
>>> q.fault = fail_at_step(0)
>>> _ = q.submit(Direction.BACKUP, payload=None, on_ack=log.append); q.poll(), log
(1, [True, False])
>>> q.mover = lambda t, checkpoint: [][0]  # a bug in a mover: cleaned up, then re-raised
>>> _ = q.submit(Direction.BACKUP, payload=None, on_ack=log.append); q.poll()
Traceback (most recent call last):
...
IndexError: list index out of range
>>> log, q.num_failed, q.num_pending
([True, False, False], 2, 0)
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any


class Direction(Enum):
    BACKUP = "device → host"
    LOADBACK = "host → device"


class TransferFault(RuntimeError):
    """A copy that failed midway (raised by a fault hook, or by a real copy error)."""


class VerifyFault(TransferFault):
    """Bytes a loadback put on device are not the bytes backed up for that prefix.

    Names the host page (or host state slot) whose copy failed, so its owner can drop it."""

    def __init__(self, message: str, *, host_page: int | None = None,
                 host_state: int | None = None) -> None:
        super().__init__(message)
        self.host_page, self.host_state = host_page, host_state


# Errors a copy can meet at run time (the transfer fails, the request recomputes); any
# other exception is a programming error and propagates after the cleanup.
COPY_ERRORS: tuple[type[BaseException], ...] = (TransferFault, RuntimeError, OSError,
                                                  MemoryError)


@dataclass(slots=True, kw_only=True)
class Transfer:
    transfer_id: int
    direction: Direction
    payload: Any  # what the mover copies (the controller's page and slot lists)
    on_ack: Callable[[bool], None]
    steps_done: int = 0  # copy steps (runs) completed so far


FaultHook = Callable[[Transfer], None]  # called before each copy step; raises TransferFault
Mover = Callable[[Transfer, Callable[[], None]], None]  # copies; calls checkpoint per step


def fail_at_step(step: int, direction: Direction | None = None) -> FaultHook:
    """A fault hook failing the first transfer (of `direction`) when it reaches `step`."""
    fired = False

    def hook(transfer: Transfer) -> None:
        nonlocal fired
        if fired or (direction is not None and transfer.direction is not direction):
            return
        if transfer.steps_done == step:
            fired = True
            raise TransferFault(f"injected fault in transfer {transfer.transfer_id} at step {step}")

    return hook


class TransferQueue:
    def __init__(self, *, mover: Mover, synchronous: bool = True,
                 fault: FaultHook | None = None) -> None:
        self.mover = mover
        self.synchronous = synchronous
        self.fault = fault
        self._pending: deque[Transfer] = deque()
        self._next_id = 1
        self.num_failed = 0  # transfers acknowledged False, whatever the cause
        self.last_error: BaseException | None = None  # the latest copy error swallowed

    @property
    def next_id(self) -> int:
        """The id the next submitted transfer gets."""
        return self._next_id

    @property
    def num_pending(self) -> int:
        return len(self._pending)

    def submit(self, direction: Direction, *, payload: Any,
               on_ack: Callable[[bool], None]) -> Transfer:
        transfer = Transfer(transfer_id=self._next_id, direction=direction, payload=payload,
                            on_ack=on_ack)
        self._next_id += 1
        if self.synchronous:
            self._run(transfer)
        else:
            self._pending.append(transfer)
        return transfer

    def poll(self, max_transfers: int | None = None) -> int:
        """Run and acknowledge queued transfers in order; returns how many were acked."""
        done = 0
        while self._pending and (max_transfers is None or done < max_transfers):
            self._run(self._pending.popleft())
            done += 1
        return done

    def _run(self, transfer: Transfer) -> None:
        def checkpoint() -> None:
            transfer.steps_done += 1
            if self.fault is not None:
                self.fault(transfer)

        try:
            if self.fault is not None:
                self.fault(transfer)  # step 0: before the first byte moves
            self.mover(transfer, checkpoint)
        except BaseException as error:
            self.num_failed += 1
            transfer.on_ack(False)  # release and free first, whatever was raised
            if not isinstance(error, COPY_ERRORS):
                raise
            self.last_error = error
            return
        transfer.on_ack(True)
