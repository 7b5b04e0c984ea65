"""kvledger: byte-exact KV-cache ledgers and a reference memory system for hybrid LLMs.

The public calls (`kvledger.api`): `plan`, `simulate`, `sweep`, `compare`, `recommend`.
Packages, bottom up (the import graph points down this list; `tests/test_imports.py`):
- `core/`: units, limits, errors, ledger rows, value parsing, registries, the GPU catalogue;
- `model/`: config.json → the model's architecture, parameters and compute;
- `sglang/`, `vllm/`: each engine's planner, side by side (flags, rule sets, ledgers, capacity);
- `logs/` (boot-log reconciliation), `sizing/` (sweeps, comparisons, recommendations);
- the memory system (`memory` extra): `pools/`, `tree/`, `store/` → `host/` → `cache/` (the
  one facade) → `engine/` and `sim/` on top of it, then `sequential/`;
- the edge: `report/`, `api.py`, `cli/`.
"""

from kvledger.api import compare, plan, recommend, simulate, sweep
from kvledger.core.version import __version__

__all__ = ["__version__", "compare", "plan", "recommend", "simulate", "sweep"]
