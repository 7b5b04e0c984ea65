"""kvledger: byte-exact KV-cache ledgers and a reference memory system for hybrid LLMs.

The public calls (`kvledger.api`): `plan`, `simulate`, `sweep`, `compare`, `recommend`.
Packages, in data-flow order: model, deploy/launch/rules (a registry per engine)/gpus, specs, resolve, ledger,
capacity, hicache, plan (the planner); sizing (sweeps, comparisons, recommendations); pools, tree, host, cache
(the memory system; `memory` extra); engine, sim; report, cli (the edge).
"""

__version__ = "0.1.0"

# `kvledger.plan` names the function below, not the module of that name: the module is
# imported first (by kvledger.api) so the function's binding is the one that stays.
from kvledger.api import compare, plan, recommend, simulate, sweep  # noqa: E402

__all__ = ["__version__", "compare", "plan", "recommend", "simulate", "sweep"]
