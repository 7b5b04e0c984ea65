"""Rows of a reconciliation: one per logged number, kvledger's value beside it.

A logged figure that was rounded (GiB with two decimals) is an interval, not a number; every
kvledger value derived from it is the set of values over that interval, and a logged number
reconciles when it lies in the set.

A verdict needs the whole log: the engine prints a known set of lines for a deployment
(kvledger.logs.expected), and a log that lacks one is INCOMPLETE however well the numbers it
does show agree. Exit codes: 0 RECONCILES (every expected line present, every number equal),
1 DIFFERS (a number differs) or INCOMPLETE (an expected line is missing), 2 for input
kvledger cannot read (LogError).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from kvledger.logs.lines import Engine


class Verdict(Enum):
    RECONCILES = "reconciles"
    DIFFERS = "differs"
    INCOMPLETE = "incomplete"


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpectedLine:
    """A line the engine prints for this deployment: how it reads, and when it is printed."""
    text: str
    why: str


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
    missing: tuple[ExpectedLine, ...] = field(default=())  # expected lines the log lacks

    @property
    def differs(self) -> tuple[Row, ...]:
        return tuple(r for r in self.rows if r.status is Status.DIFFERS)

    @property
    def verdict(self) -> Verdict:
        if self.differs:
            return Verdict.DIFFERS
        return Verdict.INCOMPLETE if self.missing else Verdict.RECONCILES

    @property
    def exit_code(self) -> int:
        return 0 if self.verdict is Verdict.RECONCILES else 1


def span(values: list[str]) -> str:
    """One value, or the range a rounded input allows ("none" when kvledger expects no line)."""
    distinct = list(dict.fromkeys(values))
    if not distinct:
        return "none"
    return distinct[0] if len(distinct) == 1 else f"{distinct[0]} … {distinct[-1]}"


def compare(line_no: int, quantity: str, logged: str, candidates: list[str],
            why: str) -> Row:
    ok = logged in candidates
    return Row(line_no=line_no, quantity=quantity, logged=logged, kvledger=span(candidates),
               status=Status.EQUAL if ok else Status.DIFFERS, reason="" if ok else why)
