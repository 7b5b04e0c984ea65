"""Moved to `kvledger.core.envelope` (plans and sizing results write their own documents);
re-exported here for one release."""

from kvledger.core.envelope import SCHEMAS, envelope, schema_name

__all__ = ["SCHEMAS", "envelope", "schema_name"]
