"""Ledger rows: the engine-neutral shape of every byte account.

A ledger is a list of itemised rows (component, count, unit bytes, total) whose total is the
sum of its rows; memo rows explain but are not summed. SGLang's ledgers
(`kvledger.sglang.ledger`) and vLLM's (`kvledger.vllm.plan`) are both made of these.

>>> row = LedgerRow(component="latent", count=11, unit_bytes=528, detail="11 layers")
>>> Ledger(name="per token", per="token", rows=(row,)).total_bytes
5808
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True, kw_only=True)
class LedgerRow:
    component: str
    count: int  # how many units (layers, slots, rows) per ledger unit
    unit_bytes: int
    detail: str = ""  # shape and dtype, for people

    @property
    def total_bytes(self) -> int:
        return self.count * self.unit_bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class Ledger:
    name: str
    per: str  # "token", "state slot", "request", "rank"
    rows: tuple[LedgerRow, ...]
    memo: tuple[LedgerRow, ...] = ()

    @property
    def total_bytes(self) -> int:
        return sum(row.total_bytes for row in self.rows)


def ledger_row_json(row: LedgerRow) -> dict[str, Any]:
    return {"component": row.component, "count": row.count, "unit_bytes": row.unit_bytes,
            "total_bytes": row.total_bytes, "detail": row.detail}


def ledger_json(ledger: Ledger | None) -> dict[str, Any] | None:
    """A ledger in every JSON document: {per, total_bytes, rows[...], memo[...]}."""
    if ledger is None:
        return None
    return {"per": ledger.per, "total_bytes": ledger.total_bytes,
            "rows": [ledger_row_json(r) for r in ledger.rows],
            "memo": [ledger_row_json(r) for r in ledger.memo]}
