"""Reference cells: vLLM 0.33's own per-request hits (`oracle/vllm-0.33-prefix-cache/`).

`summary.json` holds ``{"meta": ..., "rows": [...]}``, one row per (scenario, run); each row
names its block size, pool, groups and scheduler, and its arrays live in
``synthetic.<scenario>.<run>.npy`` (``@`` spelled ``_b``), with ``.fa_hit.npy`` and
``.steps.npy`` beside it for hybrid runs.

>>> cell = VllmOracleCell.from_row({"scenario": "S1", "run": "hybrid-align@64+nockpt",
...     "kind": "hybrid-align", "block_size": 64, "pool_tokens": 4670784,
...     "prefix_cache_retention_interval": 0, "num_prefill_checkpoint_blocks": 0,
...     "async_scheduling": True})
>>> cell.name, cell.stem, cell.spec.run_name, cell.spec.num_blocks
('S1 hybrid-align@64+nockpt', 'synthetic.S1.hybrid-align_b64+nockpt', 'hybrid-align@64+nockpt', 72982)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kvledger.sequential.spec import Components
from kvledger.sequential.vllm_spec import Scheduler, VllmReplaySpec

KINDS = {"full": Components.FULL, "hybrid-align": Components.FULL_MAMBA}


@dataclass(frozen=True, slots=True, kw_only=True)
class VllmOracleCell:
    scenario: str
    run: str
    spec: VllmReplaySpec
    expected: dict[str, Any]  # the cell's summary.json row

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> VllmOracleCell:
        kind = KINDS[row["kind"]]
        state = {}
        if kind is Components.FULL_MAMBA:
            state = {"checkpoint_blocks": row["num_prefill_checkpoint_blocks"],
                     "retention_tokens": row["prefix_cache_retention_interval"],
                     "scheduler": Scheduler.ASYNC if row["async_scheduling"] else Scheduler.SYNC}
        spec = VllmReplaySpec(block_tokens=row["block_size"], pool_tokens=row["pool_tokens"],
                              components=kind, **state)
        return cls(scenario=row["scenario"], run=row["run"], spec=spec, expected=row)

    @property
    def name(self) -> str:
        return f"{self.scenario} {self.run}"

    @property
    def stem(self) -> str:
        return f"synthetic.{self.scenario}.{self.run.replace('@', '_b')}"

    def arrays(self, directory: Path) -> dict[str, np.ndarray]:
        """hits, and for a hybrid run fa_hit and steps, as vLLM produced them."""
        out = {"hits": np.load(directory / f"{self.stem}.npy")}
        if self.spec.has_state:
            out["fa_hit"] = np.load(directory / f"{self.stem}.fa_hit.npy")
            out["steps"] = np.load(directory / f"{self.stem}.steps.npy")
        return out


def vllm_oracle_cells(directory: Path) -> list[VllmOracleCell]:
    rows = json.loads((directory / "summary.json").read_text())["rows"]
    return [VllmOracleCell.from_row(row) for row in rows]
