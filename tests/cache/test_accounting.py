"""The accounting facade for a plan: sized from the plan, slots from the plan, no torch."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kvledger.cache.accounting import accounting_cache
from kvledger.cache.seq import CheckpointMode
from sim.sim_factories import small_plan

NO_TORCH = """
import sys
import numpy as np
from kvledger.cache.accounting import accounting_cache
from kvledger.sglang.deploy import Deployment, KVDtype
from kvledger.sglang.plan import make_plan
cache = accounting_cache(make_plan(deployment=Deployment(kv_cache_dtype=KVDtype.FP8_E4M3)))
keys = np.arange(40)
seq = cache.admit(keys, prompt_tokens=2000, final_tokens=2100)
cache.extend(seq, 2000)
cache.commit(seq, keys, 2000, cache_unfinished=True)
cache.decode(seq, 100)
cache.release(seq, keys)
cache.check_integrity()
print(cache.stats.checkpoints_saved, cache.stats.inserted_tokens, "torch" in sys.modules)
"""


def test_the_accounting_path_never_imports_torch():
    out = subprocess.run([sys.executable, "-c", NO_TORCH], capture_output=True, text=True,
                         check=True).stdout.split()
    # One prefill forward of 2,000 tokens tracks its deepest 64-token grid point (1,984
    # tokens, 31 pages) and caches it; the decode stride 2,000 → 2,100 crosses the 256-token
    # track interval at 2,048, and the finish caches 2,048 tokens with that state: 2 states.
    assert out == ["2", str(2048), "False"]


@pytest.mark.parametrize(("deploy", "held", "mode"), [
    ({}, 3, CheckpointMode.TRACKED),  # working + ping-pong pair (overlap scheduler)
    ({"disable_overlap_schedule": True}, 2, CheckpointMode.TRACKED),
])
def test_held_slots_come_from_the_plan(deploy, held, mode):
    plan = small_plan(**deploy)
    cache = accounting_cache(plan)
    assert (cache.held_slots, cache.mode) == (plan.layout.held_slots_per_request, mode)
    assert cache.held_slots == held
    assert cache.rows.pages.capacity == plan.capacity.max_total_tokens // plan.layout.page_tokens
    assert cache.states.capacity == plan.capacity.state_slots
    assert cache.rows.num_free_rows == plan.capacity.max_running_requests
