"""State backup policies: which states get host room, and loadback through KV-only host nodes.

`all` is SGLang's rule (MambaComponent.needs_incremental_backup: a device state without a
host copy is backed up); `junctions` is kvledger's: a pass-through state (exactly one child)
takes only a free host slot. Scenario (page 4, write_through_selective so a node is backed
up at its second hit, when it already has a child): X is a leaf whose state holds the only
host state slot; A is inserted, then B = A + 2 pages makes A pass-through and due.
"""

from __future__ import annotations

import numpy as np
import pytest

from host.host_harness import harness, seq
from kvledger.host.controller import HiCacheController
from kvledger.host.policy import BackupPolicy
from kvledger.host.results import LoadStatus
from kvledger.host.state_backup import STATE_BACKUPS, HostStateBackup
from kvledger.tree import Tier

X, A = seq(500, 1), seq(0, 2)
B = np.r_[A, seq(100, 2)]


def scenario(policy: HostStateBackup, host_state_slots: int = 1):
    h = harness(policy=BackupPolicy.WRITE_THROUGH_SELECTIVE, host_state_slots=host_state_slots,
                state_backup=policy)
    x = h.insert(X).node
    h.ctrl.on_hit(x)  # second hit: X backed up with its state
    assert x.mamba.host_value is not None
    h.insert(A)
    b = h.insert(B).node  # A's second hit: due, with one child (B)
    return h, x, b.parent, b


def test_all_gives_a_pass_through_state_host_room_by_evicting_another():
    h, x, a, _ = scenario(HostStateBackup.ALL)
    assert len(a.children) == 1
    assert a.full.host_value is not None and a.mamba.host_value is not None
    assert x.mamba.host_value is None  # host LRU took X's state for A's
    assert h.ctrl.traffic.host_evicted_state_slots == 1
    assert h.ctrl.traffic.declined_state_backups == 0
    h.ctrl.check_integrity()


def test_junctions_backs_a_pass_through_node_up_kv_only_when_host_states_are_full():
    h, x, a, _ = scenario(HostStateBackup.JUNCTIONS)
    assert a.full.host_value is not None and a.mamba.host_value is None  # KV only
    assert x.mamba.host_value is not None  # X keeps its host state
    assert h.ctrl.traffic.host_evicted_state_slots == 0
    assert h.ctrl.traffic.declined_state_backups == 1
    assert h.ctrl.host.sizes().state_used_slots == 1
    h.ctrl.check_integrity()
    h.check_all_bytes()


def test_junctions_copies_a_pass_through_state_into_a_free_host_slot():
    h, x, a, _ = scenario(HostStateBackup.JUNCTIONS, host_state_slots=2)
    assert a.mamba.host_value is not None and x.mamba.host_value is not None
    assert h.ctrl.traffic.host_evicted_state_slots == 0


def test_a_kv_only_host_node_is_a_valid_ancestor_and_never_a_match_end():
    h, x, a, b = scenario(HostStateBackup.JUNCTIONS)
    h.ctrl.on_hit(b)  # B's second hit: a leaf, so its state evicts X's from host
    assert b.mamba.host_value is not None and x.mamba.host_value is None
    h.ctrl.evict_device(full_tokens=10_000, mamba_slots=100)
    assert h.tree.sizes(Tier.DEVICE).full_tokens == 0
    h.scramble_free_pages()
    # Through A (KV only on host) to B (state on host): one loadback of both nodes' KV.
    match = h.tree.match_prefix(B)
    assert match.best_match_node is b and match.host_hit_length == len(B)
    loaded = h.ctrl.loadback(match)
    assert loaded.status is LoadStatus.LOADED and loaded.loaded_state
    assert loaded.loaded_tokens == len(B)
    h.check_bytes(B, loaded.device_indices, b.mamba.value)
    h.ctrl.evict_device(full_tokens=10_000, mamba_slots=100)
    # A prompt that leaves B's path inside A's suffix: A has no state on either tier, so the
    # match ends at the root (recompute), never at A.
    stop = h.tree.match_prefix(np.r_[A, seq(900, 1)])
    assert stop.best_match_node is h.tree.root and stop.host_hit_length == 0
    h.ctrl.check_integrity()
    h.check_all_bytes()


def test_the_rule_table_is_closed_and_all_is_sglangs():
    assert [p.value for p in HostStateBackup] == ["all", "junctions"]
    assert STATE_BACKUPS[HostStateBackup.ALL].pass_through_evicts
    assert not STATE_BACKUPS[HostStateBackup.JUNCTIONS].pass_through_evicts


def test_the_controller_refuses_an_unknown_policy():
    h = harness()
    with pytest.raises(ValueError, match="state_backup: expected a HostStateBackup"):
        HiCacheController(tree=h.tree, device=h.ctrl.device, host=h.ctrl.host,
                          state_backup="junctions")


def test_the_real_bytes_host_group_and_the_simulator_follow_the_state_share():
    # The plan's own host ledger sizes both: 60 GiB, fp8, ratio 2 (T = 4,670,784, K = 205);
    # share 0.7 of its 128,343,918,080 B budget gives 608 + 1 state slots.
    from kvledger.cache.accounting import accounting_cache
    from kvledger.host.build import build_host, host_sizes
    from kvledger.pools.build import ScaleDown, build_pools
    from kvledger.sglang.deploy import Deployment, KVDtype
    from kvledger.sglang.plan import make_plan

    def plan(share):
        return make_plan("glm-5.3-flash", Deployment(kv_cache_dtype=KVDtype.FP8_E4M3,
                                                     enable_hierarchical_cache=True),
                         available_gib=60, host_state_share=share)

    shared, default = plan(0.7), plan(None)
    assert sizes_of(default) == (145_963 * 64, 411)
    assert sizes_of(shared) == (83_056 * 64, 609)
    stats = accounting_cache(shared, host_state_backup=HostStateBackup.JUNCTIONS).tier.stats()
    assert (stats.capacity_pages, stats.capacity_slots) == (83_056, 609)
    assert (stats.state_share, stats.state_backup) == (0.7, HostStateBackup.JUNCTIONS)
    pools = build_pools(shared, "meta", ScaleDown(max_total_tokens=4096, max_mamba_cache_size=8))
    # shapes and indices only: the planned host group holds 2.4 GB of real GLM-5.3 bytes
    _, group = build_host(pools, device="meta")
    assert (group.kv.pages.capacity * 64, group.state.slots.capacity) == host_sizes(pools)
    assert pools.plan.host.state_share == 0.7


def sizes_of(plan):
    ours = plan.host.views[1]
    return ours.host_tokens, ours.host_state_slots
