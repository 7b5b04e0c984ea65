"""One Hypothesis state machine drives HybridCache in both modes and checks the same laws.

Requests over shared prefixes are admitted, prefilled in chunks, decoded and released in any
order. After every step: the facade's own `check_integrity` (tree, rows, host tier; every
device page and state slot owned exactly once, by the tree or one running request; own
pages, held slots and reservations add up), plus what the machine sees from outside: a
refused admission changes no pool, a hit is page-aligned and never longer than a prefix that
was cached, a running request's cached prefix is exactly its locked tree path, and it never
holds more than the plan's slots. Variants: real bytes and accounting, each device-only and
with state slots so few that they bind before request rows; accounting without a state
component (dense); real bytes with a write_back host tier; accounting with the plan-built
host tier (page 64); both host variants again with kvledger's `junctions` state backup
(pass-through states only into free host slots, so KV-only host nodes occur), the real-bytes
one write_through with 1 host state slot so the rule binds; and, slot-bound (so eviction
runs often), each of the policies built for generalising (segment-branch admission with
spent-first, spent-first over FLOP-aware, and hit-density eviction), in both modes and with
a host tier, the policies' own `check_integrity` included.
"""

from __future__ import annotations

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from cache.cache_factories import Keys, accounting_cache, dense_cache, real_cache
from kvledger.cache import HybridCache, Shortfall
from kvledger.cache import accounting as plan_cache
from kvledger.cache.policies import StateAdmission, StateEviction, build_policies
from kvledger.engine.memory import HostTier
from kvledger.host.policy import BackupPolicy
from kvledger.host.state_backup import HostStateBackup
from sim.sim_factories import small_plan


def _common(a: np.ndarray, b: np.ndarray) -> int:
    n = min(len(a) - 1, len(b))
    differ = np.flatnonzero(a[:n] != b[:n])
    return int(differ[0]) if len(differ) else n


class CacheMachine(RuleBasedStateMachine):
    @staticmethod
    def build() -> HybridCache:
        return real_cache(num_pages=6)

    def __init__(self) -> None:
        super().__init__()
        self.cache = self.build()
        self.keys = Keys(self.cache)
        page = self.page = self.cache.page
        self.prefixes = [np.arange(5 * page // 2) % 7, np.arange(5 * page // 2) % 5 + 10,
                         np.arange(5 * page // 2) % 3 + 20]
        self.live: dict[int, tuple[object, np.ndarray, np.ndarray]] = {}  # row -> seq, tokens, keys
        self.cached: list[np.ndarray] = []  # token runs inserted so far (bound on hits)

    def _pools(self):
        c = self.cache
        return (c.rows.num_free_pages, c.reserved_pages, c.rows.num_free_rows,
                None if c.states is None else c.states.num_free, len(c.running), c.own_pages,
                c.held_slots_total)

    @rule(prefix=st.integers(0, 2), keep=st.sampled_from([0, 1, 2.06, 2.5]),
          extra=st.integers(1, 20), new=st.integers(1, 10), salt=st.integers(0, 3))
    def admit(self, prefix, keep, extra, new, salt):
        head = self.prefixes[prefix][: int(keep * self.page)]
        prompt = np.r_[head, (np.arange(extra) * 11 + salt) % 50 + 100].astype(np.int64)
        tokens = np.r_[prompt, np.full(new, 7)].astype(np.int64)
        keys = self.keys(tokens)
        before = self._pools()
        seq = self.cache.admit(keys, prompt_tokens=len(prompt), final_tokens=len(tokens) - 1)
        if isinstance(seq, Shortfall):
            assert seq, "a falsy Shortfall"
            assert self._pools() == before, "a refused admission changed the pools"
            return
        hit = seq.usable_hit_tokens
        assert hit % self.page == 0 and hit < len(prompt) and hit <= seq.hit_tokens
        assert hit <= max((_common(prompt, run) for run in self.cached), default=0)
        assert len(seq.slots) == self.cache.held_slots
        self.live[seq.row] = (seq, tokens, keys, len(prompt))

    @precondition(lambda self: self.live)
    @rule(data=st.data(), chunk=st.integers(1, 40), steps=st.integers(1, 8))
    def step(self, data, chunk, steps):
        """Up to `steps` forwards of one request: prefill chunks, then decode tokens."""
        row = data.draw(st.sampled_from(sorted(self.live)))
        seq, tokens, keys, prompt_len = self.live[row]
        for _ in range(steps):
            if seq.computed_tokens >= len(tokens) - 1:
                return
            left = prompt_len - seq.computed_tokens
            n = min(left, chunk) if left > 0 else 1
            ext = self.cache.extend(seq, n)
            assert all(seq.computed_tokens < at <= seq.computed_tokens + n and slot in seq.slots
                       for at, slot in ext.checkpoints) and len(ext.checkpoints) <= 1
            self.cache.commit(seq, keys, n, cache_unfinished=left > 0)
            self.cached.append(tokens[: seq.cached_tokens])

    @precondition(lambda self: self.live)
    @rule(data=st.data())
    def release(self, data):
        row = data.draw(st.sampled_from(sorted(self.live)))
        seq, tokens, keys, _ = self.live.pop(row)
        self.cache.release(seq, keys)
        self.cached.append(tokens[: seq.computed_tokens // self.page * self.page])

    @invariant()
    def conserved(self):
        self.cache.check_integrity()
        for seq, _, _, _ in self.live.values():
            assert len(seq.slots) == self.cache.held_slots
            path = (self.cache.tree.path_device_indices(seq.receipt.node)
                    if seq.receipt is not None else np.zeros(0, dtype=np.int64))
            assert np.array_equal(self.cache.rows.values(seq, seq.cached_tokens), path)


class AccountingMachine(CacheMachine):
    build = staticmethod(lambda: accounting_cache(num_pages=6))


class DenseMachine(CacheMachine):
    """No state component: every cached page is a match point, nothing holds a slot."""

    build = staticmethod(lambda: dense_cache(num_pages=6))


class SlotBoundMachine(CacheMachine):
    """4 state slots for 3 request rows: one request holds 3, so slots bind first."""

    build = staticmethod(lambda: real_cache(num_pages=12, num_state_slots=4))


class AccountingSlotBoundMachine(CacheMachine):
    build = staticmethod(lambda: accounting_cache(num_pages=12, num_state_slots=7))


class HostMachine(CacheMachine):
    build = staticmethod(lambda: real_cache(
        num_pages=6, host=HostTier(num_pages=6, num_state_slots=4, policy=BackupPolicy.WRITE_BACK)))


class AccountingHostMachine(CacheMachine):
    """The simulator's own builder: a plan of 6 pages of 64 tokens, 8 state slots, 3 rows."""

    build = staticmethod(lambda: plan_cache.accounting_cache(
        small_plan(max_total_tokens=6 * 64, max_mamba_cache_size=8, max_running_requests=3,
                   enable_hierarchical_cache=True, hicache_ratio=1.0),
        host_policy=BackupPolicy.WRITE_BACK))


class JunctionsHostMachine(CacheMachine):
    build = staticmethod(lambda: real_cache(
        num_pages=6, host=HostTier(num_pages=6, num_state_slots=1,
                                   state_backup=HostStateBackup.JUNCTIONS)))


class AccountingJunctionsHostMachine(CacheMachine):
    build = staticmethod(lambda: plan_cache.accounting_cache(
        small_plan(max_total_tokens=6 * 64, max_mamba_cache_size=8, max_running_requests=3,
                   enable_hierarchical_cache=True, hicache_ratio=1.0),
        host_state_backup=HostStateBackup.JUNCTIONS))


def _policies(admission: StateAdmission, eviction: StateEviction):
    return build_policies(admission, eviction, flops_of=float, slot_bytes=4, page_bytes=1,
                          num_slots=4)


GENERALISING = ((StateAdmission.SEGMENT_BRANCH, StateEviction.SPENT_FIRST),
                (StateAdmission.SEGMENT_BRANCH, StateEviction.SPENT_FIRST_FLOP_AWARE),
                (StateAdmission.GHOST_BRANCH, StateEviction.SPENT_FIRST_DENSITY),
                (StateAdmission.SEGMENT_BRANCH, StateEviction.HIT_DENSITY),
                (StateAdmission.QUEUE_BRANCH, StateEviction.QUEUE_AWARE),
                (StateAdmission.GHOST_BRANCH, StateEviction.QUEUE_AWARE),
                (StateAdmission.QUEUE_BRANCH, StateEviction.LRU))


class QueueMachine(CacheMachine):
    """Requests also join a waiting queue, from the same prompts `admit` draws, so the
    queue-reading policies see queued prompts that are admitted later and some that never are."""

    @rule(prefix=st.integers(0, 2), keep=st.sampled_from([0, 1, 2.06, 2.5]),
          extra=st.integers(1, 20), salt=st.integers(0, 3))
    def announce(self, prefix, keep, extra, salt):
        head = self.prefixes[prefix][: int(keep * self.page)]
        prompt = np.r_[head, (np.arange(extra) * 11 + salt) % 50 + 100].astype(np.int64)
        ahead = self.cache.policies.lookahead
        queued = len(ahead)
        self.cache.announce(self.keys(prompt), prompt_tokens=len(prompt))
        assert len(ahead) == queued + 1


def _reads_queue(a: StateAdmission, e: StateEviction) -> bool:
    return a.reads_queue or e.reads_queue


def _machine(name: str, build, base: type[CacheMachine] = CacheMachine) -> type[CacheMachine]:
    def conserved_with_policies(self):
        CacheMachine.conserved(self)
        self.cache.policies.admission.check_integrity()
        self.cache.policies.eviction.check_integrity()
    return type(name, (base,), {"build": staticmethod(build),
                                "conserved": invariant()(conserved_with_policies)})


POLICY_CASES = {}
for _a, _e in GENERALISING:
    _id = f"{_a.value}_{_e.value}".replace("-", "_")
    for _kind, _build in (
            ("real", lambda a=_a, e=_e: real_cache(num_pages=12, num_state_slots=4,
                                                   policies=_policies(a, e))),
            ("accounting", lambda a=_a, e=_e: accounting_cache(
                num_pages=12, num_state_slots=7, policies=_policies(a, e))),
            ("host", lambda a=_a, e=_e: real_cache(
                num_pages=6, num_state_slots=4, policies=_policies(a, e),
                host=HostTier(num_pages=6, num_state_slots=2,
                              policy=BackupPolicy.WRITE_BACK)))):
        _base = QueueMachine if _reads_queue(_a, _e) else CacheMachine
        POLICY_CASES[f"Test_{_kind}_{_id}"] = _machine(f"{_kind}_{_id}", _build, _base).TestCase


STEPS = settings(max_examples=20, stateful_step_count=30, deadline=None)
TestRealBytes = CacheMachine.TestCase
TestAccounting = AccountingMachine.TestCase
TestDense = DenseMachine.TestCase
TestRealBytesSlotBound = SlotBoundMachine.TestCase
TestAccountingSlotBound = AccountingSlotBoundMachine.TestCase
TestRealBytesHost = HostMachine.TestCase
TestAccountingHost = AccountingHostMachine.TestCase
TestRealBytesJunctionsHost = JunctionsHostMachine.TestCase
TestAccountingJunctionsHost = AccountingJunctionsHostMachine.TestCase
for case in (TestRealBytes, TestAccounting, TestDense, TestRealBytesSlotBound, TestAccountingSlotBound,
             TestRealBytesHost, TestAccountingHost, TestRealBytesJunctionsHost,
             TestAccountingJunctionsHost, *POLICY_CASES.values()):
    case.settings = STEPS
globals().update(POLICY_CASES)
