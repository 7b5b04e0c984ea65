"""Reference cells: SGLang's own per-request hits (`oracle/sglang-0.5.23-tree/`) as replay specs.

`summary.json` lists one cell per (scenario, run); each names its pools, page and
checkpoints, and its hit array lives in ``synthetic.<scenario>.<run>.npy`` (``@`` spelled
``_p``), with ``.full_kv_hit.npy`` next to it for FULL+MAMBA runs.

>>> cell = OracleCell.from_entry({"scenario": "S1", "run": "mamba-rust@64+branch",
...     "page_size": 64, "mamba_checkpoints": "end+branch", "pool_tokens": 4670784,
...     "state_slots": 205})
>>> cell.name, cell.stem, cell.spec.run_name
('S1 mamba-rust@64+branch', 'synthetic.S1.mamba-rust_p64+branch', 'mamba@64+branch')
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kvledger.sequential.spec import Checkpoints, Components, ReplaySpec

ORACLE_RULES = "sglang-0.5.23"


@dataclass(frozen=True, slots=True, kw_only=True)
class OracleCell:
    scenario: str
    run: str
    spec: ReplaySpec
    expected: dict[str, Any]  # the cell's summary.json entry

    @classmethod
    def from_entry(cls, entry: dict[str, Any]) -> OracleCell:
        radix = entry["mamba_checkpoints"] is None
        spec = ReplaySpec(
            page_tokens=entry["page_size"], pool_tokens=entry["pool_tokens"],
            state_slots=entry["state_slots"],
            components=Components.FULL if radix else Components.FULL_MAMBA,
            checkpoints=Checkpoints.BRANCH if entry["mamba_checkpoints"] == "end+branch"
            else Checkpoints.END,
            rules=ORACLE_RULES)
        return cls(scenario=entry["scenario"], run=entry["run"], spec=spec, expected=entry)

    @property
    def name(self) -> str:
        return f"{self.scenario} {self.run}"

    @property
    def stem(self) -> str:
        return f"synthetic.{self.scenario}.{self.run.replace('@', '_p')}"

    def arrays(self, directory: Path) -> tuple[np.ndarray, np.ndarray | None]:
        """(hits, KV-only hits or None) as SGLang produced them."""
        hits = np.load(directory / f"{self.stem}.npy")
        kv = directory / f"{self.stem}.full_kv_hit.npy"
        return hits, (np.load(kv) if self.spec.has_state else None)


def oracle_cells(directory: Path) -> list[OracleCell]:
    entries = json.loads((directory / "summary.json").read_text())
    return [OracleCell.from_entry(entry) for entry in entries]
