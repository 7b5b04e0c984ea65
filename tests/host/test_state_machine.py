"""A Hypothesis state machine over both tiers: insert, match + loadback + hit, evict on either
tier, acknowledge queued transfers and inject faults, with `check_integrity()` after every
step and every copy on either tier (KV, index pages, states) compared byte for byte with what
was written.

Requests follow a fixed trie of one-page blocks, so a token id always means the same prefix
(the harness replays known bytes for known tokens, as a deterministic model would):

    root ── a a ──┬── b
                  └── c ── d
    root ── e ── f f
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from host.host_harness import PAGE, harness
from kvledger.host.layout import HostLayout
from kvledger.host.policy import BackupPolicy
from kvledger.host.results import LoadStatus
from kvledger.host.transfer import fail_at_step


def _block(block_id: int, pages: int = 1) -> np.ndarray:
    return np.arange(block_id * 1000, block_id * 1000 + pages * PAGE, dtype=np.int64)


A, B, C, D, E, F = _block(1, 2), _block(2), _block(3), _block(4), _block(5), _block(6, 2)
SEQUENCES = [A, np.r_[A, B], np.r_[A, C], np.r_[A, C, D], E, np.r_[E, F]]


class TwoTierMachine(RuleBasedStateMachine):
    policy = BackupPolicy.WRITE_THROUGH
    synchronous = True
    layout = HostLayout.PAGE_FIRST

    def __init__(self) -> None:
        super().__init__()
        self.h = harness(policy=self.policy, synchronous=self.synchronous, layout=self.layout,
                         device_pages=8, device_state_slots=5, host_pages=10,
                         host_state_slots=4)

    @rule(i=st.integers(0, len(SEQUENCES) - 1))
    def insert(self, i):
        self.h.insert(SEQUENCES[i])

    @rule(i=st.integers(0, len(SEQUENCES) - 1), with_slot=st.booleans())
    def match_and_load(self, i, with_slot):
        tokens = SEQUENCES[i]
        match = self.h.tree.match_prefix(tokens)
        if match.best_match_node is self.h.tree.root:
            return
        slots = self.h.ctrl.device.state_allocator.alloc(1) if with_slot else None
        request_slot = None if slots is None else int(slots[0])
        res = self.h.ctrl.loadback(match, request_slot=request_slot)
        if res.status.usable:
            self.h.check_bytes(tokens, res.device_indices, res.mamba_slot)
            if request_slot is not None:
                self.h.check_bytes(tokens, res.device_indices, request_slot)
        else:
            assert res.node is match.last_device_node
            assert res.hit_tokens == match.device_hit_length
        if res.node is not self.h.tree.root:
            self.h.ctrl.on_hit(res.node)  # the request reuses the prefix: a hit
        if request_slot is not None:
            if res.status is LoadStatus.QUEUED:
                self.h.ctrl.poll()  # the copy into the request slot lands at the ack
            self.h.ctrl.device.free_states(np.array([request_slot]))

    @rule(pages=st.integers(1, 8))
    def evict_device(self, pages):
        self.h.ctrl.evict_device(full_tokens=pages * PAGE)

    @rule()
    def evict_device_state(self):
        self.h.ctrl.evict_device(mamba_slots=1)

    @rule(pages=st.integers(1, 4), states=st.integers(0, 1))
    def evict_host(self, pages, states):
        self.h.ctrl.evict_host(full_tokens=pages * PAGE, mamba_slots=states)

    @rule()
    def poll(self):
        self.h.ctrl.poll()

    @rule(step=st.integers(0, 3))
    def inject_fault(self, step):
        self.h.ctrl.queue.fault = fail_at_step(step)

    @rule(step=st.integers(0, 3), error=st.sampled_from([RuntimeError, OSError, MemoryError]))
    def inject_copy_error(self, step, error):
        """A real copy error (not a TransferFault) once, at `step` of the next transfer."""
        fired = []

        def hook(transfer):
            if not fired and transfer.steps_done == step:
                fired.append(True)
                raise error("copy failed")

        self.h.ctrl.queue.fault = hook

    @invariant()
    def tiers_consistent(self):
        # No request holds a lock here: every receipt must belong to an in-flight transfer.
        self.h.ctrl.check_integrity(request_receipts=[])

    @invariant()
    def every_copy_holds_the_written_bytes(self):
        self.h.check_all_bytes()


SETTINGS = settings(max_examples=10, stateful_step_count=30, deadline=None)


def _machine(policy: BackupPolicy, synchronous: bool, layout: HostLayout):
    name = f"Machine_{policy.name}_{'sync' if synchronous else 'queued'}_{layout.name}"
    cls = type(name, (TwoTierMachine,), {"policy": policy, "synchronous": synchronous,
                                         "layout": layout})
    return SETTINGS(cls).TestCase


TestWriteThroughSync = _machine(BackupPolicy.WRITE_THROUGH, True, HostLayout.PAGE_FIRST)
TestWriteThroughQueued = _machine(BackupPolicy.WRITE_THROUGH, False, HostLayout.LAYER_FIRST)
TestSelectiveSync = _machine(BackupPolicy.WRITE_THROUGH_SELECTIVE, True,
                             HostLayout.PAGE_FIRST_DIRECT)
TestWriteBackSync = _machine(BackupPolicy.WRITE_BACK, True, HostLayout.PAGE_FIRST)
TestWriteBackQueued = _machine(BackupPolicy.WRITE_BACK, False, HostLayout.PAGE_FIRST)


@pytest.mark.parametrize(("policy", "synchronous"), [
    (BackupPolicy.WRITE_THROUGH, True), (BackupPolicy.WRITE_THROUGH, False),
    (BackupPolicy.WRITE_THROUGH_SELECTIVE, True), (BackupPolicy.WRITE_BACK, True),
    (BackupPolicy.WRITE_BACK, False)])
def test_seeded_random_walk(policy, synchronous):
    """The same rules, 150 seeded random steps per policy: long runs the shrinking search
    above rarely reaches, with both checks after every step."""
    rng = np.random.default_rng(7)
    machine = type("Walk", (TwoTierMachine,), {"policy": policy, "synchronous": synchronous})()
    statuses = Counter()
    original = machine.h.ctrl.loadback

    def counting(match, *, request_slot=None):
        res = original(match, request_slot=request_slot)
        statuses[res.status] += 1
        return res

    machine.h.ctrl.loadback = counting
    steps = [
        lambda: machine.insert(i=int(rng.integers(len(SEQUENCES)))),
        lambda: machine.insert(i=int(rng.integers(len(SEQUENCES)))),
        lambda: machine.match_and_load(i=int(rng.integers(len(SEQUENCES))),
                                       with_slot=bool(rng.integers(2))),
        lambda: machine.match_and_load(i=int(rng.integers(len(SEQUENCES))), with_slot=True),
        lambda: machine.evict_device(pages=int(rng.integers(1, 9))),
        machine.evict_device_state,
        lambda: machine.evict_host(pages=int(rng.integers(1, 5)), states=int(rng.integers(2))),
        machine.poll,
        lambda: machine.inject_fault(step=int(rng.integers(4))),
    ]
    weights = np.array([3, 3, 4, 4, 3, 1, 1, 2, 0.3])
    for _ in range(150):
        steps[int(rng.choice(len(steps), p=weights / weights.sum()))]()
        machine.tiers_consistent()
        machine.every_copy_holds_the_written_bytes()
    assert statuses[LoadStatus.LOADED] + statuses[LoadStatus.QUEUED] >= 3, statuses
