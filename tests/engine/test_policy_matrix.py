"""The proof for state policies: every lossless admission × eviction pair keeps the cached
run's outputs bit-identical to the cache-free run, on every reference-engine workload.

Integrity (tree, pools, host tier, conservation) is checked after every call the engine makes
into the cache. Policies only decide which states are cached and which leave first, so any
difference here would be a bug in the facade's policy hooks, not a property of a policy.
"""

from __future__ import annotations

import functools

import pytest

from engine.engine_factories import CheckedCache
from kvledger.cache.policies import StateAdmission, StateEviction
from kvledger.engine.verify import cache_free_outputs, verify
from kvledger.engine.workloads import WORKLOADS
from kvledger.host.state_backup import HostStateBackup

# 12 policy pairs × 14 workloads, integrity checked after every call: minutes
pytestmark = pytest.mark.slow

PAIRS = [(a, e) for a in StateAdmission for e in StateEviction]


@functools.cache
def reference(name: str):
    """The cache-free outputs, integrity-checked after every call: they do not depend on the
    cache's policies, so each workload runs cache-free once for the whole matrix."""
    return tuple(cache_free_outputs(WORKLOADS[name], wrap=CheckedCache))


@pytest.mark.parametrize(("admission", "eviction"), PAIRS,
                         ids=[f"{a.value}+{e.value}" for a, e in PAIRS])
def test_every_policy_pair_is_lossless_on_every_workload(admission, eviction):
    differ = {}
    for name, workload in WORKLOADS.items():
        report = verify(workload, wrap=CheckedCache, admission=admission, eviction=eviction,
                        reference=reference(name))
        assert report.requests == workload.script().num_requests
        if not report.all_match:
            differ[name] = report.mismatched
    assert not differ, f"{admission.value} + {eviction.value}: outputs differ in {differ}"


def test_the_policies_change_what_is_cached():
    """Not vacuous: on the multi-turn workload reuse-filtered admission caches far less than
    the engine (it declines checkpoints no earlier prompt shared), and both still match the
    cache-free run."""
    engine = verify(WORKLOADS["multi-turn"])
    filtered = verify(WORKLOADS["multi-turn"], admission=StateAdmission.REUSE_FILTERED)
    assert engine.all_match and filtered.all_match
    assert (engine.cached_prompt_tokens, filtered.cached_prompt_tokens) == (256, 48)


HOST_WORKLOADS = [name for name, w in WORKLOADS.items() if w.host is not None]


@pytest.mark.parametrize("backup", list(HostStateBackup), ids=[b.value for b in HostStateBackup])
def test_every_host_state_backup_is_lossless_on_every_host_workload(backup):
    differ = {}
    for name in HOST_WORKLOADS:
        report = verify(WORKLOADS[name], wrap=CheckedCache, host_state_backup=backup,
                        reference=reference(name))
        if not report.all_match:
            differ[name] = report.mismatched
    assert not differ, f"--host-state-backup {backup.value}: outputs differ in {differ}"


def test_the_host_state_backup_changes_what_is_copied():
    """Not vacuous: with one host state slot, `junctions` declines state copies that
    SGLang's `all` gives the slot to (evicting another state); both match the cache-free run,
    and `all` never declines."""
    scarce = WORKLOADS["host-scarce-states"]
    every = verify(scarce, wrap=CheckedCache)
    junctions = verify(scarce, wrap=CheckedCache, host_state_backup=HostStateBackup.JUNCTIONS)
    assert every.all_match and junctions.all_match
    assert (every.host_states_declined, junctions.host_states_declined) == (0, 5)
