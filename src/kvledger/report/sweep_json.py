"""Moved to `kvledger.sizing.documents` (the sweep, comparison and recommendations write their
own `to_json()`); re-exported here for one release."""

from kvledger.sizing.documents import (
    compare_json,
    recommend_json,
    recommendation_json,
    sweep_json,
    sweep_row_json,
)

__all__ = ["compare_json", "recommend_json", "recommendation_json", "sweep_json",
           "sweep_row_json"]
