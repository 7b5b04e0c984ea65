"""Capacity plan per rank, in SGLang's order: state slots K, then tokens T, then requests N.

    rest  = available_after_weights − pre_load_free·(1 − mem_fraction_static) − mm_reservation
    K     = see kvledger.sglang.statebudget (max_mamba_cache_size, radix-off request limit, or ratio)
    rest' = rest − verify_scratch − (K + 1)·S_slot   (+1: slot 0 is the padding slot; 0.5.8: K·S)
    T     = floor(floor(rest' / C_token) / P)·P       (then min(T, max_total_tokens), re-floored;
                                                   0.5.8/0.5.9 divide by their own cell,
                                                   kvledger.sglang.budgetcell)
    N     = min(max_running_requests // attn_dp   (when set; else clamp(T/context·512, 2048, 4096)),
                T // 2,  K // slots_per_request)

`r` (mamba_full_memory_ratio, 0.9) is a ratio state:token, not a fraction. N follows
mem_cache/kv_cache_configurator.py, `KVCacheConfigurator.resolve_max_num_reqs`: the configured
limit per worker and the context heuristic are both capped at `token_capacity // 2`, then at
`max_mamba_cache_size // _calculate_mamba_ratio()` on hybrids. (0.5.8 and 0.5.9, model_runner.py
`ModelRunner.initialize` "Init max running requests", apply T // 2 only to an unset limit:
`RuleSet.requests_capped_at_half_tokens_when_set`.) C_token includes the draft model's layers
when speculating (0.5.21, 0.5.23). The compress tail and req_to_token are not budgeted: they
come out of the slack.

Worked example (SPEC §5; 0.5.21 rules, scaled fp8, fp32 state, attn_tp 1, rest = 100 GiB):

>>> from kvledger.model.config import load_model
>>> from kvledger.sglang.deploy import Deployment, KVDtype
>>> from kvledger.sglang.resolve import resolve
>>> from kvledger.sglang.rules import RULES
>>> from kvledger.core.units import GiB
>>> lay = resolve(load_model(), Deployment(kv_cache_dtype=KVDtype.FP8_E4M3), RULES["sglang-0.5.21"])
>>> p = plan_capacity(lay, MemoryInput.available(100 * GiB))
>>> p.state_slots, p.max_total_tokens, p.max_running_requests, p.binding.value
(343, 7780672, 68, 'state slots')
"""

from __future__ import annotations

from dataclasses import dataclass

from kvledger.core.totals import DeploymentTotals
from kvledger.core.units import align_down, cdiv, fmt_gib
from kvledger.sglang.budgetcell import allocated_token_bytes, budget_token_bytes, state_budget_rules
from kvledger.sglang.ledger import Ledger, side_ledger, state_ledger, verify_ledger
from kvledger.sglang.requestlimits import Limit, request_limits
from kvledger.sglang.resolve import CacheLayout
from kvledger.sglang.rolepools import RolePools, role_pools
from kvledger.sglang.roles import charged_draft_tokens
from kvledger.sglang.statebudget import StateBudget, solve_state_budget


class CapacityError(ValueError):
    """The deployment does not fit in the memory given; the message says by how much."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryInput:
    """Memory of one rank as SGLang sees it after loading weights."""

    available_bytes: int  # free after weights (what SGLang logs)
    pre_load_free_bytes: int  # free before weights; scales the (1 − mem_fraction) slack
    mem_fraction_static: float
    source: str  # how it was obtained, for the report

    @classmethod
    def available(cls, available_bytes: int, *, weights_bytes: int = 0,
                  mem_fraction_static: float | None = None) -> MemoryInput:
        """From `--available-gib`; the slack is taken from available + weights."""
        fraction = 1.0 if mem_fraction_static is None else mem_fraction_static
        return cls(available_bytes=available_bytes,
                   pre_load_free_bytes=available_bytes + weights_bytes,
                   mem_fraction_static=fraction,
                   source=f"{fmt_gib(available_bytes)} available after weights")

    @classmethod
    def gpu(cls, name: str, memory_bytes: int, weights_bytes: int,
            mem_fraction_static: float) -> MemoryInput:
        if weights_bytes >= memory_bytes:
            raise CapacityError(
                f"weights of {fmt_gib(weights_bytes)} per rank do not fit in {name}'s "
                f"{fmt_gib(memory_bytes)}; add tensor parallelism or pass --weights-gib"
            )
        return cls(available_bytes=memory_bytes - weights_bytes, pre_load_free_bytes=memory_bytes,
                   mem_fraction_static=mem_fraction_static,
                   source=f"{name} {fmt_gib(memory_bytes)} − weights {fmt_gib(weights_bytes)}")


@dataclass(frozen=True, slots=True, kw_only=True)
class CapacityPlan:
    layout: CacheLayout
    memory: MemoryInput
    slack_bytes: int  # pre_load_free · (1 − mem_fraction_static)
    mm_reservation_bytes: int
    rest_bytes: int
    slot_bytes: int  # S_slot
    token_bytes: int  # C_token (+ MTP draft layers when speculating)
    state_slots: int  # K, usable
    max_total_tokens: int  # T, usable
    max_running_requests: int  # N
    limits: dict[Limit, int]  # every candidate for N
    side: Ledger
    state_budget: StateBudget | None = None  # how K and the verify scratch were sized
    # C_token as the budget charges it when not token_bytes (0.5.8/0.5.9: kvledger.sglang.budgetcell)
    budget_token_bytes: int | None = None
    role: RolePools | None = None  # a prefill/decode server's pools as allocated

    @property
    def totals(self) -> DeploymentTotals:
        dep = self.layout.deployment
        # --dp-size R without --enable-dp-attention runs R copies of the tp group, each with
        # its own scheduler and pools (`DataParallelController.launch_dp_schedulers`,
        # sglang/srt/managers/data_parallel_controller.py: one tensor-parallel group per
        # dp_rank, base_gpu_id advanced by tp_size): tp × R GPUs.
        replicas = 1 if dep.enable_dp_attention else dep.dp_size
        ranks, workers = dep.tp_size * replicas, dep.attn_dp_size * replicas
        return DeploymentTotals(
            ranks=ranks, workers=workers,
            running_requests=self.max_running_requests * workers,
            tokens=self.logical_tokens * workers,
            token_pool_bytes=self.token_pool_bytes * ranks,
            state_pool_bytes=self.state_pool_bytes * ranks,
            verify_bytes=self.verify_bytes * ranks, side_bytes=self.side.total_bytes * ranks)

    @property
    def logical_tokens(self) -> int:  # T physical rows per rank × dcp (kvledger.sglang.dcp)
        return self.max_total_tokens * self.layout.deployment.dcp_size

    @property
    def verify(self) -> Ledger | None:
        """The verify scratch itemised (None when not speculating or not hybrid)."""
        if self.state_budget is None:
            return None
        return verify_ledger(self.layout, self.state_budget.verify_requests)

    @property
    def verify_bytes(self) -> int:
        """Speculative verify scratch (intermediate SSM states and conv windows)."""
        return self.state_budget.verify_bytes if self.state_budget else 0

    @property
    def binding(self) -> Limit:
        return min(self.limits, key=lambda limit: self.limits[limit])

    @property
    def state_pool_bytes(self) -> int:
        return (self.state_slots + 1 if self.slot_bytes else 0) * self.slot_bytes

    @property
    def token_pool_bytes(self) -> int:
        return (self.max_total_tokens + self.layout.page_tokens) * self.token_bytes

    @property
    def unused_bytes(self) -> int:
        """Budget left by flooring and max_total_tokens.

        The token pool's padding page is not in the budget (SGLang sizes T from rest' and then
        allocates T + P rows), so it is not subtracted here: it comes out of the slack, as do
        0.5.8's and 0.5.9's padding slot and unbudgeted row bytes (kvledger.sglang.budgetcell).
        """
        charged_slots = self.state_budget.charged_slots if self.state_budget else 0
        return (self.rest_bytes - self.verify_bytes - charged_slots * self.slot_bytes
                - self.max_total_tokens * (self.budget_token_bytes or self.token_bytes))


def plan_capacity(lay: CacheLayout, memory: MemoryInput, *,
                  charged_slot_bytes: int | None = None) -> CapacityPlan:
    """K, T and N for one rank; raise CapacityError when nothing fits. `charged_slot_bytes`:
    the slot bytes charged when not the rank's own (a pipeline stage's: the largest share)."""
    dep = lay.deployment
    attn_dp = dep.attn_dp_size
    slack = int(memory.pre_load_free_bytes * (1 - memory.mem_fraction_static))
    mm = lay.rules.vlm_cache_reserve_bytes if lay.model.is_multimodal else 0
    rest = memory.available_bytes - slack - mm
    if rest <= 0:
        raise CapacityError(
            f"nothing left for the KV cache: {fmt_gib(memory.available_bytes)} available − "
            f"{fmt_gib(slack)} slack (--mem-fraction-static {memory.mem_fraction_static:.6g}) − "
            f"{fmt_gib(mm)} multimodal reservation ≤ 0"
        )
    slot_bytes = state_ledger(lay).total_bytes if charged_slot_bytes is None else charged_slot_bytes
    budget = None
    rest_tokens = rest
    if slot_bytes:
        budget = solve_state_budget(
            rest_bytes=rest, slot_bytes=slot_bytes, ratio=dep.mamba_full_memory_ratio,
            draft_tokens=charged_draft_tokens(dep, lay.rules),
            slots_per_request=lay.slots_per_request,
            max_running_requests=dep.max_running_requests, attn_dp=attn_dp,
            max_mamba_cache_size=dep.max_mamba_cache_size, radix_off=dep.disable_radix_cache,
            release=state_budget_rules(lay.rules))
        if budget.state_slots < 1:
            raise CapacityError(
                f"no room for one state slot of {slot_bytes:,} B in {fmt_gib(rest)}"
                + (f" with {dep.speculative_num_draft_tokens} draft tokens of verify scratch"
                   if dep.speculative else "")
                + " (SGLang: \"Not enough GPU memory for hybrid (mamba/linear-attention) state "
                f"cache. Computed max_mamba_cache_size={budget.state_slots}\")"
            )
        rest_tokens = rest - budget.verify_bytes - budget.charged_slots * slot_bytes
    state_slots = budget.state_slots if budget else 0
    token_bytes = allocated_token_bytes(lay)
    cell = budget_token_bytes(lay)
    page = lay.page_tokens
    tokens = align_down(max(rest_tokens, 0) // cell, page)
    if dep.max_total_tokens is not None:
        if dep.max_total_tokens < page:
            raise CapacityError(f"--max-total-tokens {dep.max_total_tokens}: less than one "
                                f"{page}-token page")
        tokens = align_down(min(tokens, dep.max_total_tokens), page)
    if tokens <= 0:
        raise CapacityError(
            f"no room for one {page}-token page: {fmt_gib(rest)} for the cache, state pool of "
            f"{state_slots + 1} slots takes {fmt_gib((state_slots + 1) * slot_bytes)}"
        )
    limits = request_limits(lay, tokens, state_slots if slot_bytes else None)
    running = min(limits.values())
    if running < 1:
        raise CapacityError(
            f"{state_slots} state slots cannot hold one request of "
            f"{lay.slots_per_request} slots (SGLang: \"Hybrid (mamba/linear-attention) state "
            f"cache is too small to serve any requests. max_mamba_cache_size={state_slots}, "
            f"mamba_ratio={lay.slots_per_request}, resulting max_num_reqs={running}\")"
        )
    role = role_pools(lay, rest_bytes=rest, token_bytes=token_bytes, slot_bytes=slot_bytes,
                      state_slots=state_slots, running=running,
                      verify_requests=budget.verify_requests if budget else 0)
    return CapacityPlan(
        layout=lay, memory=memory, slack_bytes=slack, mm_reservation_bytes=mm, rest_bytes=rest,
        slot_bytes=slot_bytes, token_bytes=token_bytes, state_slots=state_slots,
        max_total_tokens=tokens, max_running_requests=running, limits=limits,
        side=side_ledger(lay, running), state_budget=budget, role=role,
        budget_token_bytes=None if cell == token_bytes else cell,
    )


# WorkloadCheck rows are labelled in words (check_workload); JSON and bindings carry codes.
WORKLOAD_CODES = {"token KV": "tokens", "state slots": "state_slots",
                  "running requests": "running_requests", "context length": "context_length"}


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkloadRow:
    ledger: str
    need: int  # units the workload needs per rank
    capacity: int  # units the plan has per rank
    need_bytes: int
    max_requests: int  # requests per rank this ledger alone admits

    @property
    def fits(self) -> bool:
        return self.need <= self.capacity

    @property
    def code(self) -> str:
        code = WORKLOAD_CODES.get(self.ledger)
        assert code is not None, f"workload ledger {self.ledger!r} has no code"
        return code


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkloadCheck:
    requests: int  # global
    requests_per_rank: int
    context_tokens: int
    rows: tuple[WorkloadRow, ...]

    @property
    def fits(self) -> bool:
        return all(row.fits for row in self.rows)

    @property
    def first_overflow(self) -> WorkloadRow | None:
        """The ledger that runs out at the fewest requests, when any does."""
        worst = min(self.rows, key=lambda row: row.max_requests)
        return None if self.fits else worst


def check_workload(plan: CapacityPlan, requests: int, context_tokens: int) -> WorkloadCheck:
    """Does `requests` concurrent requests of `context_tokens` each fit on every rank?"""
    for flag, value in (("--requests", requests), ("--context", context_tokens)):
        if value < 1:
            raise ValueError(f"{flag} {value}: expected a positive integer")
    lay = plan.layout
    per_rank = cdiv(requests, lay.deployment.attn_dp_size)
    tokens = per_rank * context_tokens
    # A request longer than the context length is refused outright (TokenizerManager's
    # "longer than the model's context length" check), whatever memory is left.
    rows = [WorkloadRow(ledger="context length", need=context_tokens, capacity=lay.context_tokens,
                        need_bytes=0,
                        max_requests=per_rank if context_tokens <= lay.context_tokens else 0)]
    rows.append(WorkloadRow(ledger="token KV", need=tokens, capacity=plan.logical_tokens,
                        need_bytes=tokens * plan.token_bytes // lay.deployment.dcp_size,
                        max_requests=plan.logical_tokens // context_tokens))
    if plan.slot_bytes:
        slots = per_rank * lay.slots_per_request
        rows.append(WorkloadRow(ledger="state slots", need=slots, capacity=plan.state_slots,
                                need_bytes=slots * plan.slot_bytes,
                                max_requests=plan.state_slots // lay.slots_per_request))
    rows.append(WorkloadRow(ledger="running requests", need=per_rank,
                            capacity=plan.max_running_requests, need_bytes=0,
                            max_requests=plan.max_running_requests))
    return WorkloadCheck(requests=requests, requests_per_rank=per_rank,
                         context_tokens=context_tokens, rows=tuple(rows))
