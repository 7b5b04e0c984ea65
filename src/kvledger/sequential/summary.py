"""A replay's summary: the oracle's summary.json fields, with the sha1 of the hit array.

The digest is ``sha1(hits.astype('<i4').tobytes())``, as the oracle computes it, so two
replays agree request by request exactly when their digests do.

>>> import numpy as np
>>> digest(np.array([0, 64, 128], dtype=np.int32)) == digest(np.array([0, 64, 128]))
True
>>> digest(np.array([0, 64, 128]))
'27c8f2d7a56bd36dbe48ca837b5c91479277bd2b'
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from kvledger.sequential.replay import ReplayOutput
from kvledger.sequential.spec import Checkpoints


def digest(hits: np.ndarray) -> str:
    return hashlib.sha1(np.asarray(hits).astype("<i4").tobytes()).hexdigest()


def summary(out: ReplayOutput) -> dict[str, Any]:
    """The oracle's per-cell fields; state fields are None for a FULL-only replay."""
    spec, c = out.spec, out.counters
    prompt_tokens = int(out.prompt_tokens.sum())
    hit_tokens = int(out.hits.astype(np.int64).sum())
    state = spec.has_state
    checkpoints = None
    if state:
        checkpoints = "end+branch" if spec.checkpoints is Checkpoints.BRANCH else "end"
    return {
        "run": spec.run_name,
        "page_size": spec.page_tokens,
        "mamba_checkpoints": checkpoints,
        "match_key": spec.match_key.value,
        "rules": spec.rules,
        "pool_tokens": spec.pool_tokens,
        "state_slots": spec.state_slots,
        "requests": len(out.hits),
        "prompt_tokens": prompt_tokens,
        "hit_tokens": hit_tokens,
        "token_hit_rate": round(hit_tokens / prompt_tokens, 6) if prompt_tokens else 0.0,
        "full_kv_hit_tokens": int(out.kv_hits.astype(np.int64).sum()) if state else None,
        "evict_calls": c.evict_calls,
        "evicted_tokens": c.evicted_tokens,
        "evicted_states": c.evicted_states if state else None,
        "branching_checkpoints": c.branching_checkpoints if state else None,
        "state_already_present": c.state_already_present if state else None,
        "final_cached_tokens": out.final_cached_tokens,
        "final_cached_states": out.final_cached_states if state else None,
        "prefix_len_sha1": digest(out.hits),
    }
