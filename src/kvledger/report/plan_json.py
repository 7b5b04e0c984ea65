"""Moved to `kvledger.sglang.plan_json` (`SglangPlan.to_json()` writes it); re-exported here for
one release."""

from kvledger.core.ledger import ledger_json
from kvledger.sglang.plan_json import (
    SCHEMA,
    WORKLOAD_CODES,
    host_json,
    plan_body,
    plan_json,
    plan_notes,
    workload_code,
)

__all__ = ["SCHEMA", "WORKLOAD_CODES", "host_json", "ledger_json", "plan_body", "plan_json",
           "plan_notes", "workload_code"]
