"""The progress bar of a command's independent runs (`kvledger.core.runner`), on stderr.

One line counts the runs done; with `rows`, each running task has its own line under it
(its label, and the requests it has replayed where the task reports them). Transient, and on
stderr: stdout (the table or the --json document) never sees it; a stderr that is not a
terminal sees nothing at all (rich would end even a transient bar with a blank line).
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TimeElapsedColumn

from kvledger.core.runner import RunObserver, Task


class RunBar(RunObserver):
    def __init__(self, what: str, *, console: Console, enabled: bool,
                 rows: bool = True) -> None:
        self.what, self.rows = what, rows
        self.bar = Progress("[progress.description]{task.description}", BarColumn(),
                            MofNCompleteColumn(), TimeElapsedColumn(), console=console,
                            transient=True, disable=not (enabled and console.is_terminal))
        self.overall: TaskID = self.bar.add_task(f"{what}: runs", total=None)
        self._running: dict[int, TaskID] = {}

    def __enter__(self) -> RunBar:
        self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()

    def planned(self, tasks: Sequence[Task]) -> None:
        self.bar.update(self.overall, total=len(tasks), completed=0)

    def started(self, index: int, task: Task) -> None:
        if self.rows:
            self._running[index] = self.bar.add_task(f"  {task.label}", total=None)

    def ticked(self, index: int, done: int, total: int) -> None:
        if index in self._running:  # a late tick of a finished task is dropped
            self.bar.update(self._running[index], completed=done, total=total)

    def finished(self, index: int) -> None:
        if index in self._running:
            self.bar.remove_task(self._running.pop(index))
        self.bar.advance(self.overall)
