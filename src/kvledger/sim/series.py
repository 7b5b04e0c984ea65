"""Per-step time series of a replay: occupancy of every ledger, traffic, hits, what blocked.

One row per simulated step, except that a run of identical decode-only steps (nothing
arrives, nothing finishes, nothing is admitted) is one row with `steps` > 1. Occupancy is
sampled at the end of the row's steps. Page and slot columns add up to the pool sizes:

    pages_requests + pages_cache_locked + pages_cache_unlocked + pages_free = token pages
    slots_requests + slots_cache + slots_free = state slots

Host columns are zero when the run has no host tier; `host_pages_used` counts host pages
holding a copy (at most the host pool's pages), the two traffic columns are cumulative.

`blocked` is a bit mask of `Constraint`s that kept the head of the queue waiting.

>>> s = TimeSeries()
>>> s.append((0.0, 1, 1, 0, 64, 0, 2, 0, 0, 6, 3, 3, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0))
>>> s.column("prefill_tokens").tolist(), len(s)
([64.0], 1)
"""

from __future__ import annotations

import csv
from enum import Enum
from pathlib import Path

import numpy as np


class Constraint(Enum):
    """What can keep a waiting request out: a ledger, or the per-step prefill budget."""

    TOKENS = "token pages (T)"
    STATE = "state slots (K)"
    RUNNING = "running requests (N)"
    PREFILL_BUDGET = "prefill budget per step"

    @property
    def bit(self) -> int:
        return 1 << list(Constraint).index(self)

    @property
    def is_ledger(self) -> bool:
        return self is not Constraint.PREFILL_BUDGET


COLUMNS = (
    "time_ms",  # clock at the end of the row
    "steps",  # engine steps this row covers
    "running",
    "waiting",
    "prefill_tokens",  # prompt tokens computed in the row (not cache hits)
    "decode_tokens",
    "pages_requests",  # pages running requests own (not yet in the cache)
    "pages_cache_locked",  # cache pages pinned by running requests
    "pages_cache_unlocked",  # cache pages eviction may take
    "pages_free",
    "pages_reserved",  # promised to admitted requests, not yet allocated
    "slots_requests",  # state slots running requests hold (working + track)
    "slots_cache",  # state checkpoints in the cache
    "slots_free",
    "prompt_tokens_cum",  # prompt tokens of requests admitted so far
    "hit_tokens_cum",  # of which cached KV
    "usable_hit_tokens_cum",  # of which cached KV with a state to continue from
    "blocked",  # Constraint bit mask
    "host_pages_used",  # host KV pages holding a copy (KV rows + index keys of one page)
    "host_slots_used",  # host state slots holding a copy
    "host_backup_pages_cum",  # pages copied device → host so far
    "host_loadback_pages_cum",  # pages copied host → device so far
)


def csv_cell(value: object) -> object:
    """Floats as the clock means them (µs resolution), not their binary residue:
    225.97699999999998 is written 225.977.

    >>> csv_cell(225.97699999999998), csv_cell(3), csv_cell(0.1 + 0.2)
    (225.977, 3, 0.3)
    """
    return round(value, 6) if isinstance(value, float) else value


def blocked_mask(constraints: set[Constraint]) -> int:
    mask = 0
    for constraint in constraints:
        mask |= constraint.bit
    return mask


class TimeSeries:
    """Rows of COLUMNS, appended as tuples and read back as float columns."""

    def __init__(self) -> None:
        self._rows: list[tuple] = []
        self._array: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self._rows)

    def append(self, row: tuple) -> None:
        assert len(row) == len(COLUMNS), f"time series row has {len(row)} fields"
        self._rows.append(row)
        self._array = None

    def array(self) -> np.ndarray:
        if self._array is None:
            self._array = np.array(self._rows, dtype=np.float64).reshape(-1, len(COLUMNS))
        return self._array

    def column(self, name: str) -> np.ndarray:
        return self.array()[:, COLUMNS.index(name)]

    def write_csv(self, path: Path) -> None:
        with Path(path).open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(COLUMNS)
            writer.writerows(tuple(map(csv_cell, row)) for row in self._rows)
