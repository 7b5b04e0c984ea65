"""Moved to `kvledger.vllm.plan_json` (`VllmPlan.to_json()` writes it); re-exported here for one
release."""

from kvledger.vllm.plan_json import SCHEMA, vllm_plan_json

__all__ = ["SCHEMA", "vllm_plan_json"]
