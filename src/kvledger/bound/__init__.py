"""The offline-optimal bound on usable prefix-cache hit for the hybrid's two pools.

Files: trace (a workload as page-prefix identities), model (the offline model M and its
exhaustive optimum), kv (R_KV: Belady's MIN on KV pages), states (R_S: the state pool as a
min-cost flow), flow (the min-cost flow over intervals), offline (the bound: exact or the
smaller relaxation), serving (R_S on one serving replay's own schedule, its running
requests' slots charged). Argument: docs, "Offline bound".
"""

from __future__ import annotations

from kvledger.bound.offline import BoundMethod, OfflineBound, offline_bound
from kvledger.bound.trace import BoundTrace

__all__ = ["BoundMethod", "BoundTrace", "OfflineBound", "offline_bound"]
