"""RunAllocator: a page pool handed out in runs, one id per run of one or more pages.

A sequential replay whose tree key is a run of pages (`kvledger.sequential.runs`) needs one
index per run, not per page, yet the pool's capacity is still pages: a run of 512 pages
takes 512 pages of it. Ids come from an `IdAllocator` (a run holds at least one page, so
``capacity_pages`` ids always suffice); each held id remembers its run's length.

Conservation law: free pages + the pages of every held run == capacity_pages.

>>> pool = RunAllocator(capacity_pages=10)
>>> ids = pool.alloc(np.array([4, 3]))
>>> ids.tolist(), pool.num_free_pages
([1, 2], 3)
>>> pool.alloc(np.array([4])) is None  # check-then-commit: 4 pages do not fit in 3
True
>>> pool.free(ids[:1]), pool.num_free_pages  # freeing returns the pages it gave back
(4, 7)
"""

from __future__ import annotations

import numpy as np

from kvledger.pools.errors import IntegrityError
from kvledger.pools.ids import IdAllocator


class RunAllocator:
    """Runs of pages out of ``capacity_pages``; `alloc` returns one id per run, or None."""

    def __init__(self, *, capacity_pages: int, what: str = "page run") -> None:
        self.capacity_pages = capacity_pages
        self.ids = IdAllocator(capacity=capacity_pages, what=what)
        self.num_used_pages = 0
        self._run_pages = np.zeros(1024, dtype=np.int64)  # pages of the run each id holds

    @property
    def num_free_pages(self) -> int:
        return self.capacity_pages - self.num_used_pages

    def alloc(self, run_pages: np.ndarray) -> np.ndarray | None:
        """One id per entry of ``run_pages`` (each ≥ 1 page: `check_integrity` finds a run of
        none), or None when they do not fit."""
        total = int(run_pages.sum())
        if total > self.num_free_pages:
            return None
        ids = self.ids.alloc(len(run_pages))
        # Each held run has at least one page, so free ids never run out before free pages.
        assert ids is not None, "fewer free ids than free pages"
        if self.ids.fresh_id > self._run_pages.size:
            grown = np.zeros(max(self.ids.fresh_id, 2 * self._run_pages.size), dtype=np.int64)
            grown[: self._run_pages.size] = self._run_pages
            self._run_pages = grown
        self._run_pages[ids] = run_pages
        self.num_used_pages += total
        return ids

    def pages_of(self, ids: np.ndarray) -> int:
        """Pages the runs ``ids`` hold together."""
        return int(self._run_pages[ids].sum())

    def free(self, ids: np.ndarray) -> int:
        """Give back runs built without repeats (each must be held); returns their pages."""
        self.ids.free_unique(ids)
        pages = self.pages_of(ids)
        self.num_used_pages -= pages
        return pages

    def allocated(self) -> np.ndarray:
        """Every run id held, ascending."""
        return self.ids.allocated()

    def check_integrity(self) -> None:
        """The id pool intact; the held runs' pages plus the free pages make the capacity."""
        self.ids.check_integrity()
        runs = self._run_pages[self.allocated()]
        if runs.size and int(runs.min()) < 1:
            raise IntegrityError(f"page runs: a held run holds {int(runs.min())} pages")
        held = int(runs.sum())
        if held != self.num_used_pages or not 0 <= held <= self.capacity_pages:
            raise IntegrityError(
                f"page runs: held runs hold {held} pages, {self.num_used_pages} counted used "
                f"of {self.capacity_pages}")
