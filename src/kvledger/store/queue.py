"""StoreQueue: store I/O on a worker thread, acknowledged back to the scheduler thread.

Like the host transfer queue, the scheduler never blocks on a write: `submit` hands the job
(a callable doing backend calls on bytes already copied out of the pools) to the worker and
returns a ticket; `poll()` returns the acknowledgements of finished jobs, in completion
order, each with its result or the exception it raised. A read the request waits for uses
`wait(ticket, timeout_s)`: past the timeout the request recomputes and the late answer is
dropped when it arrives (it holds only bytes, never pool slots, so nothing leaks).

>>> q = StoreQueue()
>>> t = q.submit(lambda: 6 * 7)
>>> q.wait(t, timeout_s=5.0)
42
>>> q.drain(timeout_s=5.0), q.pending
([], 0)
>>> q.close()
"""

from __future__ import annotations

import concurrent.futures as cf
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Ack:
    ticket: int
    tag: Any  # what the submitter attached (e.g. the manifest key of a group write)
    result: Any
    error: BaseException | None

    @property
    def ok(self) -> bool:
        return self.error is None


class StoreTimeout(TimeoutError):
    pass


class StoreQueue:
    def __init__(self, workers: int = 1) -> None:
        self._pool = cf.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kvl-store")
        self._ids = itertools.count(1)
        self._futures: dict[int, tuple[cf.Future, Any]] = {}
        self._waited: set[int] = set()
        self.acknowledged = 0
        self.abandoned = 0  # waits that timed out; their answers were dropped

    @property
    def pending(self) -> int:
        return len(self._futures)

    def submit(self, job: Callable[[], Any], tag: Any = None) -> int:
        ticket = next(self._ids)
        self._futures[ticket] = (self._pool.submit(job), tag)
        return ticket

    def wait(self, ticket: int, *, timeout_s: float) -> Any:
        """The job's result (or its exception, raised); `StoreTimeout` past `timeout_s`.
        Either way the ticket is settled here and never acknowledged by `poll`."""
        future, _ = self._futures.pop(ticket)
        try:
            return future.result(timeout=timeout_s)
        except cf.TimeoutError:
            self.abandoned += 1
            raise StoreTimeout(f"store read {ticket} took longer than {timeout_s:.3f} s") from None

    def poll(self) -> list[Ack]:
        done = [t for t, (f, _) in self._futures.items() if f.done()]
        return [self._ack(t) for t in done]

    def drain(self, *, timeout_s: float) -> list[Ack]:
        """Wait for every pending job (up to `timeout_s` in all) and acknowledge them."""
        futures = [f for f, _ in self._futures.values()]
        cf.wait(futures, timeout=timeout_s)
        return self.poll()

    def _ack(self, ticket: int) -> Ack:
        future, tag = self._futures.pop(ticket)
        self.acknowledged += 1
        error = future.exception()
        return Ack(ticket, tag, None if error else future.result(), error)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
