"""Named verification workloads: a seeded script plus the engine and memory it runs on.

Each one stresses a different path of the memory system; ``kvledger verify`` runs them with
the full cache and cache-free and compares every token and every logit.

>>> sorted(WORKLOADS)[:3], DEFAULT_WORKLOADS[0]
(['bf16', 'branching', 'chunk-mid-page'], 'shared-system')
>>> WORKLOADS["tiny-pools"].script().num_requests
9
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from kvledger.engine.config import TinyConfig
from kvledger.engine.memory import HostTier, PoolSizes
from kvledger.engine.script import Script, Turn
from kvledger.host.policy import BackupPolicy
from kvledger.sglang.deploy import StateDtype
from kvledger.sglang.specs import RowLayout
from kvledger.store.backend import BackendKind


def _tokens(rng: np.random.Generator, n: int) -> tuple[int, ...]:
    return tuple(int(t) for t in rng.integers(0, 256, size=n))


def shared_system(rng: np.random.Generator) -> Script:
    """Two system prompts, three questions each, then two more questions each."""
    systems = [_tokens(rng, 48) for _ in range(2)]
    first = tuple(Turn(parent=None, tokens=s + _tokens(rng, 5 + 7 * i))
                  for s in systems for i in range(3))
    second = tuple(Turn(parent=None, tokens=s + _tokens(rng, 11)) for s in systems for _ in range(2))
    return Script(waves=(first, second))


def multi_turn(rng: np.random.Generator) -> Script:
    """Three conversations of three turns; each turn resends the whole conversation."""
    first = tuple(Turn(parent=None, tokens=_tokens(rng, 30 + 9 * i)) for i in range(3))
    second = tuple(Turn(parent=i, tokens=_tokens(rng, 9)) for i in range(3))
    third = tuple(Turn(parent=3 + i, tokens=_tokens(rng, 6)) for i in range(3))
    return Script(waves=(first, second, third))


def branching(rng: np.random.Generator) -> Script:
    """A three-turn conversation, then branches from mid-conversation: a new follow-up to its
    first turn, and edits of its first and second messages (keeping 50 and 84 tokens). An
    edit cuts a cached node in the middle: the KV hit runs past the node's saved state, so
    the request recomputes from that state and saves a new one where it branches."""
    root = (Turn(parent=None, tokens=_tokens(rng, 70)),)
    turn2 = (Turn(parent=0, tokens=_tokens(rng, 30)),)
    turn3 = (Turn(parent=1, tokens=_tokens(rng, 10)),)
    branches = (Turn(parent=0, tokens=_tokens(rng, 7)),
                Turn(parent=0, keep=50, tokens=_tokens(rng, 9)),
                Turn(parent=1, keep=84, tokens=_tokens(rng, 5)))
    return Script(waves=(root, turn2, turn3, branches))


def revisit(rng: np.random.Generator) -> Script:
    """Four system prompts one after another, then all four again: the first ones have
    left the device by then, so their second visit is a host hit (loadback)."""
    systems = [_tokens(rng, 48) for _ in range(4)]
    once = tuple((Turn(parent=None, tokens=s + _tokens(rng, 6)),) for s in systems)
    again = tuple((Turn(parent=None, tokens=s + _tokens(rng, 6)),) for s in systems)
    return Script(waves=once + again)


@dataclass(frozen=True, slots=True, kw_only=True)
class Workload:
    name: str
    about: str
    build: Callable[[np.random.Generator], Script]
    config: TinyConfig = field(default_factory=TinyConfig)
    sizes: PoolSizes = field(default_factory=PoolSizes)
    host: HostTier | None = None
    chunk_tokens: int = 32
    max_running_requests: int = 4
    max_new_tokens: int = 4
    mamba_chunk_tokens: int | None = None  # None: states at every page end
    store: BackendKind | None = None  # a store tier below host, on a server started for the run
    seed: int = 0

    def script(self) -> Script:
        return self.build(np.random.default_rng(self.seed))


_SMALL = PoolSizes(num_pages=8, num_state_slots=8, max_running_requests=2)
_HOSTED = PoolSizes(num_pages=8, num_state_slots=8, max_running_requests=2)

WORKLOADS: dict[str, Workload] = {w.name: w for w in (
    Workload(name="shared-system", about="two system prompts shared by five questions each",
             build=shared_system),
    Workload(name="multi-turn", about="three conversations, three turns each", build=multi_turn),
    Workload(name="branching", about="follow-ups and edits branching from mid-conversation",
             build=branching),
    Workload(name="tiny-pools", about="8 device pages, 8 state slots: eviction all the time",
             build=multi_turn, sizes=_SMALL, chunk_tokens=16, max_running_requests=2),
    Workload(name="chunk-mid-page", about="7-token prefill chunks cut pages and kpool groups",
             build=multi_turn, chunk_tokens=7),
    Workload(name="bf16", about="bf16 latent rows and temporal state, host tier write_back",
             build=revisit, sizes=_HOSTED, max_running_requests=2,
             config=TinyConfig(kv_layout=RowLayout.BF16, temporal_dtype=StateDtype.BFLOAT16),
             host=HostTier(num_pages=64, num_state_slots=32, policy=BackupPolicy.WRITE_BACK)),
    Workload(name="coarse-grid", about="states only every 32 tokens (2 pages): KV hits run "
             "deeper than states, so requests recompute from the last state and branch",
             build=branching, mamba_chunk_tokens=32, chunk_tokens=64),
    *(Workload(name=f"host-{policy.value.replace('_', '-')}",
               about=f"revisits after device eviction, host tier {policy.value}",
               build=revisit, sizes=_HOSTED, max_running_requests=2,
               host=HostTier(num_pages=64, num_state_slots=32, policy=policy))
      for policy in BackupPolicy),
    # One host state slot: every state backup competes for it, so `--host-state-backup`
    # decides which nodes go to host KV-only (`kvledger.host.state_backup`).
    Workload(name="host-scarce-states", about="three conversations, one host state slot: "
             "the host state backup rule decides", build=multi_turn, sizes=_HOSTED,
             max_running_requests=2, host=HostTier(num_pages=64, num_state_slots=1)),
    # Device (8 pages) and host (4 pages) both drop the first prompts before their revisit:
    # the store tier (write-through) serves them, on a real server started for the run.
    *(Workload(name=f"l3-{kind.value}",
               about=f"revisits evicted from device and host, restored from {kind.value}",
               build=revisit, sizes=_HOSTED, max_running_requests=2,
               host=HostTier(num_pages=4, num_state_slots=4), store=kind)
      for kind in BackendKind),
)}

# What `kvledger verify` runs when no workload is named: one of each memory path.
DEFAULT_WORKLOADS = ("shared-system", "branching", "tiny-pools", "chunk-mid-page",
                     "host-write-back")
