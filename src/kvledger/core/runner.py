"""Where a command's independent runs execute: here, in local processes, or on a Ray cluster.

A command with several independent simulations or plans (`simulate --compare`, `sweep`,
`recommend`) hands them to one `Runner` as a list of `Task`s and gets their results back in
list order, whichever finished first. Three runners, one contract:

- `Serial()` (`--jobs 1`, the default): every task in this process, one after another;
- `Processes(jobs)` (`--jobs N`): N local worker processes, started by forkserver where the
  platform has it, else spawn (never fork: the caller may hold threads, a progress bar's);
- `RayCluster(address)` (`--ray ADDRESS|auto`): Ray tasks on a cluster (the `ray` extra).

Contract (what makes every runner's results the serial run's, byte for byte):
1. A task's function is module level (pickled by reference) and pure: equal arguments give
   an equal result, in any process. Nothing a task returns may depend on the process.
2. A task may wait on one earlier task (`after`): that task's result is appended to its
   arguments, and it starts only once that task has finished.
3. At most `slots` tasks run at once. Of the ready ones, a task others wait on starts first
   (the baseline replay the offline bound needs), then the costliest (`cost`, a relative
   hint: the longest runs first keep the last worker from running alone), ties in list
   order. The order never changes a result, only when it is ready.
4. A task with `ticks` takes a keyword `tick` (default None), called `tick(done, total)` as
   it runs: `Serial` reports each tick, `Processes` forwards them through a queue (at most
   one per task every `TICK_S`), `RayCluster` passes none (its progress is whole tasks).
5. The first exception a task raises is raised to the caller; tasks not started are dropped.

>>> def twice(x, tick=None):
...     return 2 * x
>>> Serial().run([Task(fn=pow, args=(2, 5), label="2⁵"),
...               Task(fn=twice, args=(), label="twice 2⁵", after=0)])
[32, 64]
"""

from __future__ import annotations

import functools
import logging
import multiprocessing
import queue
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from concurrent import futures
from dataclasses import dataclass
from typing import Any

from kvledger.core.extras import RAY

TICK_S = 0.2  # a worker forwards a task's progress at most this often
WAIT_S = 0.1  # how often the caller looks at the forwarded progress while tasks run


@dataclass(frozen=True, slots=True, kw_only=True)
class Task:
    """One independent run: `fn(*args)`, plus the result of task `after` when it waits on
    one."""

    fn: Callable[..., Any]  # module level, pure (contract 1)
    args: tuple[Any, ...]
    label: str  # what the progress bar says while it runs
    after: int | None = None  # the earlier task whose result is appended to args
    ticks: bool = False  # fn takes tick=(done, total) (contract 4)
    cost: float = 1.0  # relative run time, a scheduling hint (contract 3)


class RunObserver:
    """What a runner says while it runs (the CLI draws a progress bar from it); no-ops."""

    def planned(self, tasks: Sequence[Task]) -> None: ...

    def started(self, index: int, task: Task) -> None: ...

    def ticked(self, index: int, done: int, total: int) -> None: ...

    def finished(self, index: int) -> None: ...


class Runner(ABC):
    """Runs a list of tasks (module doc) through one backend session."""

    def run(self, tasks: Sequence[Task], observer: RunObserver | None = None) -> list[Any]:
        """Every task's result, in list order."""
        seen = observer or RunObserver()
        for i, task in enumerate(tasks):
            assert task.after is None or 0 <= task.after < i, (
                f"task {i} ({task.label}) waits on task {task.after}, not an earlier one")
        seen.planned(tasks)
        results: dict[int, Any] = {}
        awaited = {t.after for t in tasks}
        # contract 3: what others wait on, then the costliest, then list order
        waiting = sorted(range(len(tasks)), key=lambda i: (i not in awaited, -tasks[i].cost, i))
        running: dict[Any, int] = {}
        with self._backend(tasks) as backend:
            while waiting or running:
                while len(running) < backend.slots:
                    ready = next((i for i in waiting if tasks[i].after is None
                                  or tasks[i].after in results), None)
                    if ready is None:
                        break
                    waiting.remove(ready)
                    task = tasks[ready]
                    args = (task.args if task.after is None
                            else (*task.args, results[task.after]))
                    seen.started(ready, task)
                    running[backend.submit(ready, task, args, seen)] = ready
                assert running, "tasks wait on each other but none runs"
                for handle, value in backend.wait(list(running), seen):
                    index = running.pop(handle)
                    results[index] = value
                    seen.finished(index)
        return [results[i] for i in range(len(tasks))]

    @property
    def parallel(self) -> bool:
        """Whether tasks may run at once (progress then comes per task, not per tick)."""
        return True

    @abstractmethod
    def _backend(self, tasks: Sequence[Task]) -> Backend: ...


class Backend(ABC):
    """One run's session (a context manager): submit a task, wait for some to finish."""

    slots: int  # tasks at once

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    @abstractmethod
    def submit(self, index: int, task: Task, args: tuple, seen: RunObserver) -> Any: ...

    @abstractmethod
    def wait(self, handles: list[Any], seen: RunObserver) -> list[tuple[Any, Any]]:
        """(handle, result) of at least one finished task; forwards progress meanwhile."""


@dataclass(frozen=True)
class Serial(Runner):
    """Every task here, one after another (`--jobs 1`)."""

    @property
    def parallel(self) -> bool:
        return False

    def _backend(self, tasks: Sequence[Task]) -> Backend:
        return _SerialBackend()


SERIAL = Serial()


class _SerialBackend(Backend):
    slots = 1

    def __init__(self) -> None:
        self._done: dict[int, Any] = {}

    def submit(self, index: int, task: Task, args: tuple, seen: RunObserver) -> Any:
        if task.ticks:
            self._done[index] = task.fn(*args, tick=functools.partial(seen.ticked, index))
        else:
            self._done[index] = task.fn(*args)
        return index

    def wait(self, handles: list[Any], seen: RunObserver) -> list[tuple[Any, Any]]:
        return [(h, self._done.pop(h)) for h in handles]


def start_method() -> str:
    """forkserver where the platform has it (Linux, macOS), else spawn (Windows)."""
    methods = multiprocessing.get_all_start_methods()
    return "forkserver" if "forkserver" in methods else "spawn"


@dataclass(frozen=True)
class Processes(Runner):
    """`jobs` local worker processes (`--jobs N`)."""

    jobs: int

    def __post_init__(self) -> None:
        assert self.jobs >= 1, f"Processes: jobs {self.jobs}, expected at least 1"

    def _backend(self, tasks: Sequence[Task]) -> Backend:
        # the forkserver imports the tasks' modules once; each worker forks from it
        preload = sorted({t.fn.__module__ for t in tasks} - {"__main__", "builtins"})
        return _ProcessBackend(self.jobs, preload)


_TICKS: Any = None  # in a worker process: the queue its ticks go to


def _init_worker(ticks: Any) -> None:
    global _TICKS
    _TICKS = ticks


class _Forward:
    """A worker's tick: (index, done, total) onto the queue, at most once every TICK_S and
    always the last."""

    def __init__(self, index: int) -> None:
        self.index, self.last = index, 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done >= total or now - self.last >= TICK_S:
            self.last = now
            _TICKS.put((self.index, done, total))


def _call(index: int, fn: Callable[..., Any], args: tuple, ticks: bool) -> Any:
    return fn(*args, tick=_Forward(index)) if ticks else fn(*args)


class _ProcessBackend(Backend):
    def __init__(self, jobs: int, preload: list[str]) -> None:
        context = multiprocessing.get_context(start_method())
        if context.get_start_method() == "forkserver":
            context.set_forkserver_preload(preload)  # read when the server starts
        self.slots = jobs
        self._ticks = context.Queue()
        self._pool = futures.ProcessPoolExecutor(max_workers=jobs, mp_context=context,
                                                 initializer=_init_worker,
                                                 initargs=(self._ticks,))

    def __exit__(self, *exc: object) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._ticks.close()

    def submit(self, index: int, task: Task, args: tuple, seen: RunObserver) -> Any:
        return self._pool.submit(_call, index, task.fn, args, task.ticks)

    def _forward(self, seen: RunObserver) -> None:
        while True:
            try:
                index, done, total = self._ticks.get_nowait()
            except queue.Empty:
                return
            seen.ticked(index, done, total)

    def wait(self, handles: list[Any], seen: RunObserver) -> list[tuple[Any, Any]]:
        while True:
            done, _ = futures.wait(handles, timeout=WAIT_S,
                                   return_when=futures.FIRST_COMPLETED)
            self._forward(seen)
            if done:
                return [(f, f.result()) for f in handles if f in done]


@dataclass(frozen=True)
class RayCluster(Runner):
    """Ray tasks on the cluster at `address` (`--ray ADDRESS|auto`; Ray's own address
    forms), or on the Ray instance this process already started (`ray.init`). Each task
    asks for one CPU; as many run at once as the cluster has CPUs. The cluster's workers
    import kvledger: install it there (or ship it in Ray's runtime_env)."""

    address: str

    def _backend(self, tasks: Sequence[Task]) -> Backend:
        RAY.require("--ray")
        return _RayBackend(self.address)


class _RayBackend(Backend):
    def __init__(self, address: str) -> None:
        import ray

        self._ray = ray
        self._started = not ray.is_initialized()
        if self._started:
            try:
                ray.init(address=address, include_dashboard=False, log_to_driver=False,
                         logging_level=logging.WARNING)  # no INFO lines on connecting
            except ConnectionError as exc:
                raise ValueError(f"--ray {address}: no Ray cluster there ({exc}); start one "
                                 "with `ray start --head`, or name its address") from None
            except ValueError as exc:  # Ray's words for an address it cannot read
                raise ValueError(f"--ray {address}: {exc}") from None
        self.slots = max(int(ray.cluster_resources().get("CPU", 1)), 1)
        self._remote = ray.remote(num_cpus=1)(_call_here)

    def __exit__(self, *exc: object) -> None:
        if self._started:
            self._ray.shutdown()

    def submit(self, index: int, task: Task, args: tuple, seen: RunObserver) -> Any:
        return self._remote.remote(task.fn, args)

    def wait(self, handles: list[Any], seen: RunObserver) -> list[tuple[Any, Any]]:
        ready, _ = self._ray.wait(handles, num_returns=1)
        more, _ = self._ray.wait(handles, num_returns=len(handles), timeout=0)
        done = set(ready) | set(more)
        return [(ref, self._ray.get(ref)) for ref in handles if ref in done]


def _call_here(fn: Callable[..., Any], args: tuple) -> Any:
    return fn(*args)
