"""VllmPlan: the one call from (model, vLLM deployment, rule set, memory) to ledgers and capacity.

Ledgers: `kvledger.vllm.ledgers` (per block, per request, lost per request and per rank).
`lost_bytes` = lost per rank + lost per request × whole concurrent requests. With
--pipeline-parallel-size every stage's pool is planned (`kvledger.vllm.pipeline`) and the
per-rank layout, capacity and ledgers are the binding stage's.

>>> p = make_vllm_plan("qwen3-next-80b-a3b-instruct", VllmDeployment(tensor_parallel_size=2),
...                    rules="vllm-0.13", available_gib=44.59)
>>> p.capacity.num_blocks, p.capacity.logged_tokens, f"{p.capacity.max_concurrency:.2f}"
(7162, 973760, '14.77')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from kvledger.core.engines import Engine
from kvledger.core.gpus import GPU, get_gpu
from kvledger.core.ledger import Ledger, LedgerRow
from kvledger.core.limits import MAX_COUNT, show_value
from kvledger.core.plan import Binding, ContextFit
from kvledger.core.totals import DeploymentTotals
from kvledger.model.arch import ModelArch
from kvledger.model.config import REPO_IDS, load_model
from kvledger.vllm.capacity import VllmCapacity, vllm_capacity
from kvledger.vllm.deploy import VllmDeployment
from kvledger.vllm.layout import VllmLayout, vllm_layout
from kvledger.vllm.ledgers import VllmLedgers, vllm_ledgers
from kvledger.vllm.memory import KVMemory, kv_memory, memory_source
from kvledger.vllm.pipeline import VllmPipeline, plan_pipeline
from kvledger.vllm.plan_json import vllm_plan_json
from kvledger.vllm.rank_weights import gpu_weights
from kvledger.vllm.rules import DEFAULT_VLLM_RULES, VllmRules, get_vllm_rules
from kvledger.vllm.serve_line import vllm_command


@dataclass(frozen=True, slots=True, kw_only=True)
class VllmPlan:
    """vLLM's plan of one deployment; an `EnginePlan` (kvledger.core.plan).

    Deployment-wide (`totals`): GPUs = TP × PCP × PP × DP (DCP reuses TP ranks), each DP rank
    its own engine and block pool (vllm/v1/engine/core.py: one EngineCore and KV cache per DP
    rank); running requests = DP × min(max_num_seqs, ⌊max_concurrency⌋), max_concurrency =
    num_gpu_blocks / blocks per max_model_len request (`get_max_concurrency_for_kv_cache_config`,
    vllm/v1/core/kv_cache_utils.py); tokens = DP × the logged "GPU KV cache size" (with DCP,
    whole requests' tokens over the DCP ranks); the token pool is the one block pool attention
    pages and Mamba states share (no state pool), allocated on every GPU: Σ over pipeline
    stages of num_gpu_blocks × the stage's bytes per block, × TP × PCP × DP."""

    layout: VllmLayout
    memory: KVMemory
    capacity: VllmCapacity
    ledgers: VllmLedgers
    notes: tuple[str, ...]
    given: VllmDeployment | None = None  # the flags as given, before vLLM's defaults
    requests: int | None = None  # the workload asked (global concurrent requests), if any
    context_tokens_asked: int | None = None  # its tokens per request (None: max_model_len)
    pipeline: VllmPipeline | None = None  # with --pipeline-parallel-size > 1: every stage

    engine: ClassVar[Engine] = Engine.VLLM
    # the memory system builds SGLang's pools; vLLM's shared block pool is not modelled there
    simulatable: ClassVar[bool] = False

    @property
    def model(self) -> ModelArch:
        return self.layout.model

    @property
    def gpu(self) -> GPU | None:
        return self.layout.gpu

    @property
    def rules(self) -> VllmRules:
        return self.layout.rules

    @property
    def deployment(self) -> VllmDeployment:
        return self.layout.deployment

    @property
    def lost_bytes(self) -> int:
        """Bytes per rank that hold nothing with the pool full of max_model_len requests."""
        whole = int(self.capacity.max_concurrency)
        return self.ledgers.lost_per_rank.total_bytes + whole * self.ledgers.lost_per_request.total_bytes

    @property
    def totals(self) -> DeploymentTotals:
        dep, cap = self.deployment, self.capacity
        dp = dep.data_parallel_size
        per_stage = dep.tensor_parallel_size * dep.prefill_context_parallel_size * dp
        pools = (self.pipeline.pool_bytes if self.pipeline is not None
                 else cap.num_blocks * cap.bytes_per_block)
        return DeploymentTotals(
            ranks=dep.gpus_per_engine * dp, workers=dp,
            running_requests=dp * min(cap.max_num_seqs, int(cap.max_concurrency)),
            tokens=dp * cap.logged_tokens, token_pool_bytes=pools * per_stage,
            state_pool_bytes=0, verify_bytes=0, side_bytes=0)

    @property
    def binding(self) -> Binding:
        """`kv_blocks` (the block pool caps concurrency) or `max_num_seqs`."""
        cap = self.capacity
        code = "max_num_seqs" if cap.max_num_seqs < cap.max_concurrency else "kv_blocks"
        return Binding(code=code, label=cap.binding)

    @property
    def context_tokens(self) -> int:
        return self.layout.max_model_len

    @property
    def page_tokens(self) -> int:
        return self.layout.block_tokens

    def _concurrency(self, context_tokens: int) -> float:
        """Requests of `context_tokens` tokens the block pool holds, as vLLM computes its
        logged maximum concurrency (num_gpu_blocks / blocks per request), 0 past max_model_len
        (vLLM rejects longer prompts)."""
        if context_tokens > self.context_tokens:
            return 0.0
        return self.capacity.num_blocks / self.layout.blocks_for_len(context_tokens)

    def fit_at(self, context_tokens: int | None = None) -> ContextFit:
        """C defaults to the plan's workload's, else max_model_len."""
        length = next(c for c in (context_tokens, self.context_tokens_asked, self.context_tokens)
                      if c is not None)
        if length < 1:
            raise ValueError(f"--context {length}: expected a positive integer")
        seqs, blocks = self.capacity.max_num_seqs, self._concurrency(length)
        if length > self.context_tokens:
            binding = Binding(code="context_length", label="max_model_len")
        elif seqs < blocks:
            binding = Binding(code="max_num_seqs", label=f"--max-num-seqs {seqs}")
        else:
            binding = Binding(code="kv_blocks", label="KV-cache blocks")
        return ContextFit(context_tokens=length, per_worker=min(seqs, int(blocks)),
                          workers=self.totals.workers, binding=binding)

    @property
    def asked(self) -> bool:
        """Whether the plan was made with a workload (`requests`, `context_tokens_asked`)."""
        return self.requests is not None or self.context_tokens_asked is not None

    def fits(self, requests: int | None, context_tokens: int | None) -> bool | None:
        """Over all DP engines; with neither given, the plan's own workload (None without
        one). A plan that exists already holds one request of max_model_len (vLLM refuses to
        start otherwise)."""
        if requests is None and context_tokens is None:
            if not self.asked:
                return None
            requests, context_tokens = self.requests, self.context_tokens_asked
        return self.fit_at(context_tokens).requests >= (1 if requests is None else requests)

    def headroom(self, requests: int, context_tokens: int | None) -> float:
        length = self.fit_at(context_tokens).context_tokens
        concurrency = min(self.capacity.max_num_seqs, self._concurrency(length))
        return self.totals.workers * concurrency / requests

    def ledgers_by_name(self) -> dict[str, Ledger]:
        led = self.ledgers
        return {"memory": led.memory, "per_block": led.per_block,
                "per_request": led.per_request, "lost_per_request": led.lost_per_request,
                "lost_per_rank": led.lost_per_rank}

    @property
    def pools(self) -> Ledger:
        cap = self.capacity
        return Ledger(name="device pools", per="rank", rows=(
            LedgerRow(component="block pool", count=cap.num_blocks,
                      unit_bytes=cap.bytes_per_block,
                      detail="num_gpu_blocks (block 0 the null block), attention and state "
                             "pages alike"),))

    def launch_command(self, model_ref: str | None = None, *, nodes: int = 1) -> str:
        """`vllm serve …` with the flags as given (`nodes` is SGLang's: each DP rank of vLLM
        is its own engine, launched alike)."""
        ref = model_ref or REPO_IDS.get(self.model.name, self.model.name)
        return vllm_command(ref, self.given or self.deployment)

    def layout_fields(self, *, as_given: bool = False) -> dict[str, Any]:
        dep = self.given if as_given and self.given else self.deployment
        return {"tp_size": dep.tensor_parallel_size, "dp_size": dep.data_parallel_size,
                "pp_size": dep.pipeline_parallel_size,
                "dcp_size": dep.decode_context_parallel_size, "disaggregation_mode": None,
                "enable_dp_attention": False, "replicas": dep.data_parallel_size,
                "attn_tp_size": dep.tensor_parallel_size, "kv_cache_dtype": dep.kv_cache_dtype,
                "mamba_ssm_dtype": dep.mamba_ssm_cache_dtype}

    def flag_fields(self) -> dict[str, Any]:
        dep = self.deployment
        return {"tensor_parallel_size": dep.tensor_parallel_size,
                "data_parallel_size": dep.data_parallel_size,
                "pipeline_parallel_size": dep.pipeline_parallel_size,
                "decode_context_parallel_size": dep.decode_context_parallel_size,
                "prefill_context_parallel_size": dep.prefill_context_parallel_size,
                "max_model_len": self.layout.max_model_len, "kv_cache_dtype": dep.kv_cache_dtype}

    def per_worker(self) -> dict[str, int | float]:
        """Per DP engine."""
        cap = self.capacity
        return {"num_gpu_blocks": cap.num_blocks, "blocks_per_request": cap.blocks_per_request,
                "max_concurrency": cap.max_concurrency, "gpu_kv_cache_tokens": cap.logged_tokens,
                "max_num_seqs": cap.max_num_seqs, "max_model_len": self.layout.max_model_len}

    def unit_bytes(self) -> dict[str, int]:
        return {}  # vLLM sizes by the block, not by token, slot and request

    def to_json(self, ignored_flags: tuple[str, ...] = ()) -> dict[str, Any]:
        """The `kvledger plan --engine vllm --json` document (`kvledger.vllm.plan_json`)."""
        return vllm_plan_json(self, ignored_flags)


def _check_workload(requests: int | None, context_tokens: int | None) -> None:
    for flag, value in (("--requests", requests), ("--context", context_tokens)):
        if value is not None and not (isinstance(value, int) and 1 <= value <= MAX_COUNT):
            raise ValueError(f"{flag} {show_value(value)}: expected a positive integer (at "
                             f"most {MAX_COUNT:,})")


def make_vllm_plan(
    model: str | ModelArch,
    deployment: VllmDeployment | None = None,
    *,
    rules: str = DEFAULT_VLLM_RULES,
    gpu: str | None = None,
    available_gib: float | None = None,
    weights_gib: float | None = None,
    activation_gib: float | None = None,
    non_torch_gib: float | None = None,
    cudagraph_gib: float | None = None,
    requests: int | None = None,
    context_tokens: int | None = None,
) -> VllmPlan:
    """Resolve, size and ledger a vLLM deployment; errors name the flag at fault.

    `requests`/`context_tokens`: a workload the plan carries (`fits(None, None)`, the
    documents' `workload`); it changes no pool: vLLM sizes by max_model_len."""
    _check_workload(requests, context_tokens)
    arch = load_model(model) if isinstance(model, str) else model
    dep = deployment or VllmDeployment()
    rule_set = get_vllm_rules(rules)
    gpu_spec = get_gpu(gpu) if gpu else None
    lay = vllm_layout(arch, dep, rule_set, gpu_spec)
    notes = list(lay.notes)
    weights = 0
    if memory_source(available_gib, dep, gpu_spec) is None:
        assert gpu_spec is not None
        weights = gpu_weights(arch, lay, gpu_spec, weights_gib, dep, notes)
    memory = kv_memory(available_gib=available_gib,
                       kv_cache_memory_bytes=dep.kv_cache_memory_bytes,
                       total_bytes=None if gpu_spec is None else gpu_spec.memory_bytes,
                       utilization=lay.deployment.gpu_memory_utilization, rules=rule_set,
                       weights_bytes=weights, activation_gib=activation_gib,
                       non_torch_gib=non_torch_gib, cudagraph_gib=cudagraph_gib, notes=notes)
    pipeline = None
    if lay.deployment.pipeline_parallel_size > 1:
        pipeline = plan_pipeline(lay, memory)
        binding = pipeline.binding
        lay, capacity, ledgers = binding.layout, binding.capacity, binding.ledgers
        notes.append(_stage_note(pipeline))
    else:
        capacity = vllm_capacity(lay, memory.available_bytes)
        ledgers = vllm_ledgers(lay, capacity, memory)
    if lay.dcp_size > 1:
        notes.append(f"--decode-context-parallel-size {lay.dcp_size}: a rank holds "
                     f"cdiv(tokens, {lay.dcp_size}) of each request's tokens; concurrency and "
                     "the GPU KV cache size count whole requests over the DCP ranks")
    if dep.max_num_seqs is None and gpu_spec is not None:  # without a GPU the layout says so
        notes.append(f"--max-num-seqs not given: vLLM's default {capacity.max_num_seqs:,} on "
                     f"{gpu_spec.name}")
    if lay.deployment.data_parallel_size > 1:
        notes.append(f"--data-parallel-size {lay.deployment.data_parallel_size}: every number is "
                     "per engine; each DP rank has its own pool")
    if context_tokens is not None and context_tokens > lay.max_model_len:
        notes.append(f"--context {context_tokens:,}: longer than max_model_len "
                     f"{lay.max_model_len:,}, which vLLM rejects; raise --max-model-len")
    return VllmPlan(layout=lay, memory=memory, capacity=capacity,
                    ledgers=ledgers, notes=tuple(notes), given=dep,
                    requests=requests, context_tokens_asked=context_tokens, pipeline=pipeline)


def _stage_note(pipe: VllmPipeline) -> str:
    stage = pipe.binding.stage
    return (f"pp {len(pipe.stages)}: ledgers and capacity per rank are stage PP{stage.pp_rank}'s "
            f"(layers {stage.start_layer}..{stage.end_layer - 1}), whose "
            f"{pipe.binding.capacity.own_num_blocks:,} blocks are the fewest; every stage gets "
            "that count")
