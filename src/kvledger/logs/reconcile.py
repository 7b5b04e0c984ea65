"""Rows of a reconciliation: one per logged number, kvledger's value beside it.

A logged figure that was rounded (GiB with two decimals) is an interval, not a number; every
kvledger value derived from it is the set of values over that interval, and a logged number
reconciles when it lies in the set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from kvledger.logs.lines import Engine


class Status(Enum):
    EQUAL = "equal"
    DIFFERS = "DIFFERS"
    INPUT = "input"  # the figure the others are derived from
    INFO = "not reconciled"  # shown, never counted: kvledger cannot derive it from the log


@dataclass(frozen=True, slots=True, kw_only=True)
class Row:
    line_no: int
    quantity: str
    logged: str
    kvledger: str
    status: Status
    reason: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Reconciliation:
    engine: Engine
    version: str | None
    rules: str
    model: str
    rows: tuple[Row, ...]
    binding: str
    derived: tuple[tuple[str, str], ...] = field(default=())  # what the log never prints
    notes: tuple[str, ...] = field(default=())

    @property
    def differs(self) -> tuple[Row, ...]:
        return tuple(r for r in self.rows if r.status is Status.DIFFERS)

    @property
    def exit_code(self) -> int:
        return 1 if self.differs else 0


def span(values: list[str]) -> str:
    """One value, or the range a rounded input allows."""
    distinct = list(dict.fromkeys(values))
    return distinct[0] if len(distinct) == 1 else f"{distinct[0]} … {distinct[-1]}"


def compare(line_no: int, quantity: str, logged: str, candidates: list[str],
            why: str) -> Row:
    ok = logged in candidates
    return Row(line_no=line_no, quantity=quantity, logged=logged, kvledger=span(candidates),
               status=Status.EQUAL if ok else Status.DIFFERS, reason="" if ok else why)
