"""VllmPlan: the one call from (model, vLLM deployment, rule set, memory) to ledgers and capacity.

Ledgers (itemised rows, as everywhere in kvledger):
- `per block`: one block id across the tensors of its group (group size × page);
- `per request`: the blocks one max_model_len request takes from each group;
- `lost per request`: bytes a max_model_len request holds that carry nothing — the Mamba page
  padding, the padding layers of short groups, the empty tail of the last attention block;
  memo: how much of that tail the block inflation (aligned block vs the kernel block) adds;
- `lost per rank`: the memory no block covers and the null block.
`lost_bytes` = lost per rank + lost per request × whole concurrent requests.

>>> p = make_vllm_plan("qwen3-next-80b-a3b-instruct", VllmDeployment(tensor_parallel_size=2),
...                    rules="vllm-0.13", available_gib=44.59)
>>> p.capacity.num_blocks, p.capacity.logged_tokens, f"{p.capacity.max_concurrency:.2f}"
(7162, 973760, '14.77')
"""

from __future__ import annotations

from dataclasses import dataclass

from kvledger.core.gpus import GPU, get_gpu
from kvledger.core.ledger import Ledger, LedgerRow
from kvledger.core.units import GiB, cdiv
from kvledger.model.arch import ModelArch
from kvledger.model.config import load_model
from kvledger.vllm.capacity import VllmCapacity, vllm_capacity
from kvledger.vllm.deploy import VllmDeployment
from kvledger.vllm.layout import (
    CUDA_DEFAULT_BLOCK,
    FLASHMLA_SPARSE_BLOCK,
    VllmLayout,
    vllm_layout,
)
from kvledger.vllm.memory import KVMemory, kv_memory
from kvledger.vllm.rules import DEFAULT_VLLM_RULES, get_vllm_rules


@dataclass(frozen=True, slots=True, kw_only=True)
class VllmLedgers:
    per_block: Ledger
    per_request: Ledger
    lost_per_request: Ledger
    lost_per_rank: Ledger
    memory: Ledger


@dataclass(frozen=True, slots=True, kw_only=True)
class VllmPlan:
    layout: VllmLayout
    memory: KVMemory
    capacity: VllmCapacity
    ledgers: VllmLedgers
    notes: tuple[str, ...]

    @property
    def model(self) -> ModelArch:
        return self.layout.model

    @property
    def gpu(self) -> GPU | None:
        return self.layout.gpu

    @property
    def lost_bytes(self) -> int:
        """Bytes per rank that hold nothing with the pool full of max_model_len requests."""
        whole = int(self.capacity.max_concurrency)
        return self.ledgers.lost_per_rank.total_bytes + whole * self.ledgers.lost_per_request.total_bytes


def _per_block(lay: VllmLayout) -> Ledger:
    rows = [LedgerRow(component="layer page", count=lay.group_size, unit_bytes=lay.page_bytes,
                      detail=f"{lay.block_tokens} tokens × {lay.attention.bytes_per_token} B "
                             "(one tensor per group slot)")]
    if lay.indexer is not None:
        ix = lay.indexer
        rows.append(LedgerRow(component="indexer page", count=lay.num_indexer_layers,
                              unit_bytes=ix.page_bytes,
                              detail=f"{ix.block_tokens // ix.tokens_per_state} index rows × "
                                     f"{ix.row_bytes} B (fp8 + fp32 scale)"))
    memo = []
    if lay.mamba is not None:
        memo.append(LedgerRow(component="Mamba state (real)", count=1,
                              unit_bytes=lay.mamba.real_page_bytes,
                              detail=" + ".join(f"{s}" for s in lay.mamba.shapes)))
        memo.append(LedgerRow(component="Mamba page padding", count=1,
                              unit_bytes=lay.mamba.padding_bytes,
                              detail=f"{lay.alignment.padding_pct:.2f}% of the state"
                              if lay.alignment else ""))
    return Ledger(name="per block", per="block", rows=tuple(rows), memo=tuple(memo))


def _per_request(lay: VllmLayout) -> Ledger:
    rows = []
    for i, group in enumerate(lay.groups):
        if group.kind == "attention":
            blocks = cdiv(lay.max_model_len, lay.block_tokens)
            detail = f"cdiv({lay.max_model_len:,}, {lay.block_tokens})"
        else:
            assert lay.mamba is not None
            blocks = lay.mamba.blocks_per_request
            detail = (f"{lay.mamba_cache_mode.value}: "
                      f"{'2' if lay.mamba.align else '1'} + {lay.mamba.spec_blocks} speculative")
        rows.append(LedgerRow(component=f"group {i} ({group.kind}, {group.num_layers} layers)",
                              count=blocks, unit_bytes=lay.bytes_per_block, detail=detail))
    return Ledger(name="per request (max_model_len)", per="request", rows=tuple(rows))


def _lost_per_request(lay: VllmLayout) -> Ledger:
    rows: list[LedgerRow] = []
    memo: list[LedgerRow] = []
    size = lay.group_size
    for group in lay.groups:
        if group.kind == "attention":
            blocks = cdiv(lay.max_model_len, lay.block_tokens)
            tail = blocks * lay.block_tokens - lay.max_model_len
            rows.append(LedgerRow(component="last attention block, empty tail",
                                  count=tail * group.num_layers,
                                  unit_bytes=lay.attention.bytes_per_token,
                                  detail=f"{tail} tokens × {group.num_layers} layers"))
            if lay.indexer is not None:
                rows.append(LedgerRow(
                    component="last indexer block, empty tail",
                    count=tail // lay.indexer.tokens_per_state * lay.num_indexer_layers,
                    unit_bytes=lay.indexer.row_bytes,
                    detail=f"{tail // lay.indexer.tokens_per_state} rows × "
                           f"{lay.num_indexer_layers} layers"))
            kernel = FLASHMLA_SPARSE_BLOCK if lay.indexer is not None else CUDA_DEFAULT_BLOCK
            if lay.block_tokens > kernel and lay.mamba is not None:
                kernel_tail = cdiv(lay.max_model_len, kernel) * kernel \
                    - lay.max_model_len
                memo.append(LedgerRow(
                    component="of which block inflation", count=(tail - kernel_tail) * group.num_layers,
                    unit_bytes=lay.attention.bytes_per_token,
                    detail=f"block {lay.block_tokens} vs the kernel's {kernel}"))
        else:
            assert lay.mamba is not None
            blocks = lay.mamba.blocks_per_request
            rows.append(LedgerRow(component="Mamba page padding", count=blocks * group.num_layers,
                                  unit_bytes=lay.mamba.padding_bytes,
                                  detail=f"{blocks} blocks × {group.num_layers} layers"))
        if group.num_layers < size:
            blocks = (cdiv(lay.max_model_len, lay.block_tokens) if group.kind == "attention"
                      else lay.mamba.blocks_per_request)
            rows.append(LedgerRow(component=f"padding layers ({group.kind} group of "
                                            f"{group.num_layers} < {size})",
                                  count=blocks * (size - group.num_layers),
                                  unit_bytes=lay.page_bytes, detail="block slots never written"))
    return Ledger(name="lost per request (max_model_len)", per="request", rows=tuple(rows),
                  memo=tuple(memo))


def _lost_per_rank(cap: VllmCapacity) -> Ledger:
    rows = (LedgerRow(component="memory past the last whole block", count=1,
                      unit_bytes=cap.unallocated_bytes,
                      detail=f"available mod {cap.bytes_per_block:,} B"),
            LedgerRow(component="null block", count=1, unit_bytes=cap.bytes_per_block,
                      detail="BlockPool holds block 0 back"))
    return Ledger(name="lost per rank", per="rank", rows=rows)


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
) -> VllmPlan:
    """Resolve, size and ledger a vLLM deployment; errors name the flag at fault."""
    arch = load_model(model) if isinstance(model, str) else model
    dep = deployment or VllmDeployment()
    rule_set = get_vllm_rules(rules)
    gpu_spec = get_gpu(gpu) if gpu else None
    lay = vllm_layout(arch, dep, rule_set, gpu_spec)
    notes = list(lay.notes)
    sources = [name for name, given in (("--available-gib", available_gib is not None),
                                        ("--kv-cache-memory-bytes",
                                         dep.kv_cache_memory_bytes is not None)) if given]
    if len(sources) > 1:
        raise ValueError(f"{' and '.join(sources)}: give one, not both")
    weights = 0
    if not sources:
        if gpu_spec is None:
            raise ValueError("--engine vllm needs --gpu, --available-gib (vLLM's logged "
                             "'Available KV cache memory') or --kv-cache-memory-bytes")
        if weights_gib is not None:
            if not weights_gib >= 0:
                raise ValueError(f"--weights-gib {weights_gib:g}: expected a non-negative number")
            weights = int(weights_gib * GiB)
        elif arch.weight_bytes is None:
            raise ValueError(f"{arch.name}: weight size unknown; pass --weights-gib")
        else:
            weights = arch.weight_bytes // lay.deployment.tensor_parallel_size
            notes.append(f"weights estimated from the config: {weights / GiB:,.2f} GiB per rank; "
                         "override with --weights-gib (vLLM logs 'Model loading took X GiB')")
        budget = gpu_spec.memory_bytes * lay.deployment.gpu_memory_utilization
        if weights >= budget:
            raise ValueError(
                f"weights of {weights / GiB:,.2f} GiB per rank do not fit in "
                f"--gpu-memory-utilization {lay.deployment.gpu_memory_utilization:g} × "
                f"{gpu_spec.name}'s {gpu_spec.memory_bytes / GiB:,.2f} GiB "
                f"({budget / GiB:,.2f} GiB); raise --tensor-parallel-size or pass --weights-gib")
    memory = kv_memory(available_gib=available_gib,
                       kv_cache_memory_bytes=dep.kv_cache_memory_bytes,
                       total_bytes=None if gpu_spec is None else gpu_spec.memory_bytes,
                       utilization=lay.deployment.gpu_memory_utilization, rules=rule_set,
                       weights_bytes=weights, activation_gib=activation_gib,
                       non_torch_gib=non_torch_gib, cudagraph_gib=cudagraph_gib, notes=notes)
    capacity = vllm_capacity(lay, memory.available_bytes)
    ledgers = VllmLedgers(per_block=_per_block(lay), per_request=_per_request(lay),
                          lost_per_request=_lost_per_request(lay),
                          lost_per_rank=_lost_per_rank(capacity),
                          memory=Ledger(name="KV cache memory", per="rank", rows=memory.rows()))
    if lay.deployment.data_parallel_size > 1:
        notes.append(f"--data-parallel-size {lay.deployment.data_parallel_size}: every number is "
                     "per engine; each DP rank has its own pool")
    return VllmPlan(layout=lay, memory=memory, capacity=capacity, ledgers=ledgers,
                    notes=tuple(notes))
