"""SglangPlan: the one call from (model, deployment, rule set, memory) to ledgers and capacity.

Memory comes from exactly one of:
- `available_gib`: what SGLang logs as free memory after weights (the slack is
  `(available + weights)·(1 − mem_fraction_static)`, mem_fraction_static defaulting to 1.0);
- `gpu` (a catalogue GPU) and/or `gpu_memory_gib` (its total memory, or any device's): the
  memory free before load is the total less the CUDA context (`memfraction.CUDA_CONTEXT_BYTES`),
  less the weights per rank (estimated from the config, or `weights_gib`);
  mem_fraction_static defaults to SGLang's automatic choice for that GPU and layout
  (`memfraction.auto_mem_fraction_static`).
With neither, the SPEC's worked example is used: 100 GiB available after weights.

>>> p = make_plan(kv_cache_dtype="fp8_e4m3")
>>> p.ledgers.token.total_bytes, p.capacity.state_slots, p.capacity.max_running_requests
(7260, 343, 68)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from kvledger.core.engines import Engine
from kvledger.core.gpus import GPU, get_gpu
from kvledger.core.ledger import LedgerRow
from kvledger.core.limits import MAX_COUNT, show_value
from kvledger.core.plan import Binding, ContextFit
from kvledger.core.totals import DeploymentTotals
from kvledger.model.arch import ModelArch
from kvledger.model.config import DEFAULT_MODEL, REPO_IDS, load_model
from kvledger.sglang.capacity import (
    CapacityPlan,
    WorkloadCheck,
    check_workload,
    plan_capacity,
)
from kvledger.sglang.cudagraphs import cuda_graphs
from kvledger.sglang.deploy import Deployment, KVDtype
from kvledger.sglang.hicache import HostPlan, plan_host
from kvledger.sglang.launch.line import sglang_command
from kvledger.sglang.ledger import (
    Ledger,
    draft_token_ledger,
    request_ledger,
    state_ledger,
    token_ledger,
)
from kvledger.sglang.memfraction import MemFraction
from kvledger.sglang.plan_json import plan_json
from kvledger.sglang.plan_memory import device_memory, plan_memory
from kvledger.sglang.rankweights import weights_ledger
from kvledger.sglang.resolve import CacheLayout, resolve
from kvledger.sglang.rules import DEFAULT_RULES, RuleSet, get_rules
from kvledger.sglang.stages import PipelinePlan, plan_stages


@dataclass(frozen=True, slots=True, kw_only=True)
class Ledgers:
    token: Ledger
    draft_token: Ledger | None
    state: Ledger
    request: Ledger
    weights: Ledger | None = None  # estimated weights per rank (what --gpu subtracts)


@dataclass(frozen=True, slots=True, kw_only=True)
class SglangPlan:
    """SGLang's plan of one deployment; an `EnginePlan` (kvledger.core.plan)."""

    layout: CacheLayout
    ledgers: Ledgers
    capacity: CapacityPlan
    workload: WorkloadCheck | None
    gpu: GPU | None
    notes: tuple[str, ...]
    host: HostPlan | None = None  # with --enable-hierarchical-cache: host pools, two views
    weights_estimated: bool = False  # the weights ledger's total was subtracted from the GPU
    auto_mem_fraction: MemFraction | None = None  # SGLang's choice, when the flag was unset
    given: Deployment | None = None  # the flags as given, before the rule set's autos
    pipeline: PipelinePlan | None = None  # with --pp-size > 1: every stage's plan

    engine: ClassVar[Engine] = Engine.SGLANG
    simulatable: ClassVar[bool] = True  # the memory system builds SGLang's pools

    @property
    def model(self) -> ModelArch:
        return self.layout.model

    @property
    def rules(self) -> RuleSet:
        return self.layout.rules

    @property
    def deployment(self) -> Deployment:
        return self.layout.deployment

    @property
    def totals(self) -> DeploymentTotals:
        """Deployment totals; HBM as allocated (a role's pools, every pipeline stage's)."""
        if self.pipeline is not None:
            dep = self.deployment
            return self.pipeline.totals(1 if dep.enable_dp_attention else dep.dp_size)
        totals, role = self.capacity.totals, self.capacity.role
        if role is None:
            return totals
        return replace(totals, state_pool_bytes=(role.allocated_state_slots * role.slot_bytes
                                                 * totals.ranks),
                       verify_bytes=(role.allocated_verify_rows * role.verify_row_bytes
                                     * totals.ranks))

    @property
    def binding(self) -> Binding:
        return Binding(code=self.capacity.binding.code, label=self.capacity.binding.value)

    @property
    def context_tokens(self) -> int:
        return self.layout.context_tokens

    @property
    def page_tokens(self) -> int:
        return self.layout.page_tokens

    def _check(self, requests: int | None, context_tokens: int | None) -> WorkloadCheck:
        """The workload check; C defaults to the plan's workload's, else the context length."""
        if context_tokens is None:
            context_tokens = (self.workload.context_tokens if self.workload is not None
                              else self.context_tokens)
        return check_workload(self.capacity, 1 if requests is None else requests, context_tokens)

    def fit_at(self, context_tokens: int | None = None) -> ContextFit:
        """The workload check's ledgers at one request: the fewest requests any admits per
        worker (token KV T // C, state slots K // slots per request, N), or none when C
        passes the context length (SGLang refuses such a request outright). C defaults to the
        plan's workload's, else the context length."""
        if context_tokens is None and self.workload is not None:
            context_tokens = self.workload.context_tokens
        check = self._check(1, context_tokens)
        length, *pools = check.rows
        worst = length if not length.fits else min(pools, key=lambda row: row.max_requests)
        return ContextFit(context_tokens=check.context_tokens, per_worker=worst.max_requests,
                          workers=self.totals.workers,
                          binding=Binding(code=worst.code, label=worst.ledger))

    def fits(self, requests: int | None, context_tokens: int | None) -> bool | None:
        if requests is None and context_tokens is None:
            return None if self.workload is None else self.workload.fits
        return self._check(requests, context_tokens).fits

    def headroom(self, requests: int, context_tokens: int | None) -> float:
        check = self._check(requests, context_tokens)
        return min(row.capacity / row.need for row in check.rows if row.need)

    def ledgers_by_name(self) -> dict[str, Ledger]:
        led, cap = self.ledgers, self.capacity
        named = {"per_token": led.token, "draft_per_token": led.draft_token,
                 "per_state_slot": led.state, "per_request": led.request,
                 "side_buffers": cap.side, "verify_scratch": cap.verify,
                 "weights_per_rank": led.weights}
        return {name: ledger for name, ledger in named.items() if ledger is not None}

    @property
    def pools(self) -> Ledger:
        """The token pool (T + one padding page), the state pool (K + the padding slot) and
        the verify scratch of one rank, as SGLang allocates them: a prefill/decode server's
        as its role builds them (`capacity.role`), a pipeline stage's state slots of its own
        layers."""
        cap, role = self.capacity, self.capacity.role
        rows = [LedgerRow(component="token pool", count=cap.max_total_tokens + self.page_tokens,
                          unit_bytes=cap.token_bytes, detail="T + one padding page")]
        slot_bytes = state_ledger(self.layout).total_bytes  # a stage's own, not the charge
        slots, detail = cap.state_slots + 1, "K + the padding slot"
        if role is not None and role.allocated_state_slots != role.charged_state_slots:
            slots, detail = role.allocated_state_slots, "as the decode request pool allocates"
        if slot_bytes:
            rows.append(LedgerRow(component="state pool", count=slots, unit_bytes=slot_bytes,
                                  detail=detail))
        verify = (cap.verify_bytes if role is None
                  else role.allocated_verify_rows * role.verify_row_bytes)
        if verify:
            rows.append(LedgerRow(component="verify scratch", count=1, unit_bytes=verify))
        return Ledger(name="device pools", per="rank", rows=tuple(rows))

    def launch_command(self, model_ref: str | None = None, *, nodes: int = 1) -> str:
        ref = model_ref or REPO_IDS.get(self.model.name, self.model.name)
        return sglang_command(ref, self.given or self.deployment, nodes=nodes)

    def layout_fields(self, *, as_given: bool = False) -> dict[str, Any]:
        return deployment_fields(self.given if as_given and self.given else self.deployment)

    def flag_fields(self) -> dict[str, Any]:
        dep = self.deployment
        return {"tp_size": dep.tp_size, "dp_size": dep.dp_size,
                "enable_dp_attention": dep.enable_dp_attention,
                "kv_cache_dtype": dep.kv_cache_dtype.value}

    def per_worker(self) -> dict[str, int | float]:
        cap = self.capacity
        return {"state_slots": cap.state_slots, "max_total_tokens": cap.max_total_tokens,
                "max_running_requests": cap.max_running_requests}

    def unit_bytes(self) -> dict[str, int]:
        cap = self.capacity
        return {"available_bytes": cap.memory.available_bytes, "token_bytes": cap.token_bytes,
                "slot_bytes": cap.slot_bytes, "request_bytes": self.ledgers.request.total_bytes}

    def to_json(self, ignored_flags: tuple[str, ...] = ()) -> dict[str, Any]:
        """The `kvledger plan --json` document (`kvledger.sglang.plan_json`)."""
        return plan_json(self, ignored_flags)




def deployment_fields(dep: Deployment) -> dict[str, Any]:
    """The layout keys a sweep row shows (tp, DP attention or replicas, pipeline stages,
    DCP, the prefill/decode role, dtypes)."""
    return {"tp_size": dep.tp_size, "dp_size": dep.dp_size,
            "enable_dp_attention": dep.enable_dp_attention,
            "replicas": 1 if dep.enable_dp_attention else dep.dp_size,
            "attn_tp_size": dep.attn_tp_size, "pp_size": dep.pp_size, "dcp_size": dep.dcp_size,
            "disaggregation_mode": dep.disaggregation_mode.value,
            "kv_cache_dtype": dep.kv_cache_dtype.value,
            "mamba_ssm_dtype": dep.mamba_ssm_dtype.value if dep.mamba_ssm_dtype else None}


def make_plan(
    model: str | ModelArch = DEFAULT_MODEL,
    deployment: Deployment | None = None,
    *,
    rules: str = DEFAULT_RULES,
    gpu: str | None = None,
    available_gib: float | None = None,
    weights_gib: float | None = None,
    gpu_memory_gib: float | None = None,
    family: str | None = None,
    requests: int | None = None,
    context_tokens: int | None = None,
    kv_cache_dtype: str | None = None,
    host_state_share: float | None = None,
    rocm: bool | None = None,
) -> SglangPlan:
    """Resolve, ledger and plan capacity; errors name the flag or field at fault.

    `host_state_share`: --hicache-state-share, kvledger's what-if split of the host budget
    between state slots and KV (`kvledger.sglang.hicache_share`); needs the host tier.
    `rocm`: the platform is ROCm (a log's own word for it) when no GPU is named."""
    arch = load_model(model, family=family) if isinstance(model, str) else model
    dep = deployment or Deployment()
    if kv_cache_dtype is not None:
        dep = replace(dep, kv_cache_dtype=KVDtype(kv_cache_dtype))
    gpu_spec = get_gpu(gpu) if gpu else None
    layout = resolve(arch, dep, get_rules(rules), gpu=gpu_spec, rocm=rocm)
    if (dep.mem_fraction_static is None and not layout.rules.auto_mem_fraction_read
            and device_memory(gpu_spec, gpu_memory_gib) is not None):
        raise ValueError(f"--mem-fraction-static: kvledger has SGLang's automatic fraction "
                         f"from 0.5.21's and 0.5.23's source, not {rules}'s (its "
                         "_handle_gpu_memory_settings buckets differ); pass it")
    notes = list(layout.notes)
    on_rocm = gpu_spec.arch.is_rocm if rocm is None and gpu_spec is not None else bool(rocm)
    graphs = cuda_graphs(layout.rules.cuda_graphs, arch, layout.deployment, rocm=on_rocm)
    memory, auto_fraction = plan_memory(arch, layout.deployment, gpu_spec, available_gib, weights_gib,
                     gpu_memory_gib, notes, requests_given=dep.max_running_requests,
                     cap_max_bs_by_requests=layout.rules.cuda_graph_max_bs_capped_by_requests,
                     graphs=graphs)
    pipeline = None
    if layout.deployment.pp_size > 1:
        pipeline = plan_stages(layout, memory)
        stage = pipeline.stages[pipeline.binding_stage]
        layout, capacity = stage.layout, stage.capacity
        notes.append(f"pp {len(pipeline.stages)}: ledgers and capacity per rank are stage "
                     f"{stage.pp_rank}'s (layers {stage.start_layer}..{stage.end_layer - 1}), "
                     "whose own tokens are the fewest; every stage shares its T, K and N")
    else:
        capacity = plan_capacity(layout, memory)
    workload = None
    for flag, value in (("--requests", requests), ("--context", context_tokens)):
        if isinstance(value, int) and value > MAX_COUNT:
            raise ValueError(f"{flag} {show_value(value)}: expected a positive integer (at most "
                             f"{MAX_COUNT:,})")
    if requests is not None or context_tokens is not None:
        workload = check_workload(capacity, 1 if requests is None else requests,
                                  layout.context_tokens if context_tokens is None else context_tokens)
    ledgers = Ledgers(token=token_ledger(layout), draft_token=draft_token_ledger(layout),
                      state=state_ledger(layout), request=request_ledger(layout),
                      weights=weights_ledger(arch, layout.deployment))
    host = None
    if host_state_share is not None and not layout.deployment.enable_hierarchical_cache:
        raise ValueError(f"--hicache-state-share {host_state_share!r}: has no effect without "
                         "--enable-hierarchical-cache")
    if layout.deployment.enable_hierarchical_cache:
        host = plan_host(layout, device_tokens=capacity.max_total_tokens,
                         device_state_slots=capacity.state_slots,
                         device_token_pool_bytes=capacity.token_pool_bytes,
                         device_state_pool_bytes=capacity.state_pool_bytes,
                         state_share=host_state_share)
    estimated = (weights_gib is None and ledgers.weights is not None
                 and memory.pre_load_free_bytes - memory.available_bytes
                 == ledgers.weights.total_bytes
                 and device_memory(gpu_spec, gpu_memory_gib) is not None)
    return SglangPlan(layout=layout, ledgers=ledgers, capacity=capacity, workload=workload,
                      gpu=gpu_spec, notes=tuple(notes), host=host, weights_estimated=estimated,
                      auto_mem_fraction=auto_fraction, given=dep, pipeline=pipeline)
