"""VllmLedgers: vLLM's itemised ledgers of one rank (rows as everywhere in kvledger).

- `per block`: one block id across the tensors of the widest group (group size × page, with
  sparse MLA its indexer pages and the block-stride rounding);
- `per request`: the blocks one max_model_len request takes from each group;
- `lost per request`: bytes a max_model_len request holds that carry nothing — the Mamba page
  padding, the padding layers of short groups (with mixed pages: the bytes of each block its
  group's pages leave unused), the empty tail of the last attention block;
  memo: how much of that tail the block inflation (aligned block vs the kernel block) adds;
- `lost per rank`: the memory no block covers, the null block, and on a pipeline stage with
  narrower blocks than the widest stage's the blocks it leaves unallocated;
With --decode-context-parallel-size a request's attention blocks and their empty tail are one
DCP rank's: cdiv(max_model_len, dcp) tokens.
- `memory`: the KV cache memory and how it was obtained (`kvledger.vllm.memory`).
"""

from __future__ import annotations

from dataclasses import dataclass

from kvledger.core.ledger import Ledger, LedgerRow
from kvledger.core.units import cdiv
from kvledger.vllm.capacity import VllmCapacity
from kvledger.vllm.context_parallel import local_tokens
from kvledger.vllm.layout import CUDA_DEFAULT_BLOCK, FLASHMLA_SPARSE_BLOCK, VllmLayout
from kvledger.vllm.memory import KVMemory


@dataclass(frozen=True, slots=True, kw_only=True)
class VllmLedgers:
    per_block: Ledger
    per_request: Ledger
    lost_per_request: Ledger
    lost_per_rank: Ledger
    memory: Ledger


def per_block_ledger(lay: VllmLayout) -> Ledger:
    """One block id across the widest group's tensors (every group spans the same bytes)."""
    widest = max(lay.groups, key=lay.group_bytes)
    if widest.kind == "attention":
        rows = [LedgerRow(component="layer page", count=widest.num_layers,
                          unit_bytes=lay.page_bytes,
                          detail=f"{lay.block_tokens} tokens × {lay.attention.bytes_per_token} B "
                                 "(one tensor per group slot)")]
    else:
        assert lay.mamba is not None
        rows = [LedgerRow(component="state page", count=widest.num_layers,
                          unit_bytes=lay.mamba.page_bytes,
                          detail=f"{lay.block_tokens} tokens × "
                                 f"{lay.attention.align_bytes_per_token} B (the widest group)")]
    if lay.indexer is not None and widest.kind == "attention":
        ix = lay.indexer
        rows.append(LedgerRow(component="indexer page", count=lay.num_indexer_layers,
                              unit_bytes=ix.page_bytes,
                              detail=f"{ix.block_tokens // ix.tokens_per_state} index rows × "
                                     f"{ix.row_bytes} B (fp8 + fp32 scale)"))
    rounding = lay.bytes_per_block - lay.group_bytes(widest)
    if rounding:
        rows.append(LedgerRow(component="block stride rounding", count=1, unit_bytes=rounding,
                              detail=f"up to a multiple of "
                                     f"{lay.block_stride_alignment_bytes:,} B"))
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


def _rank_tokens(lay: VllmLayout) -> tuple[int, str]:
    """A max_model_len request's tokens on one DCP rank, and how they are written."""
    if lay.dcp_size == 1:
        return lay.max_model_len, f"{lay.max_model_len:,}"
    return (local_tokens(lay.max_model_len, lay.dcp_size),
            f"cdiv({lay.max_model_len:,}, dcp {lay.dcp_size})")


def per_request_ledger(lay: VllmLayout) -> Ledger:
    rows = []
    tokens, shown = _rank_tokens(lay)
    for i, group in enumerate(lay.groups):
        if group.kind == "attention":
            blocks = cdiv(tokens, lay.block_tokens)
            detail = f"cdiv({shown}, {lay.block_tokens})"
        else:
            assert lay.mamba is not None
            blocks = lay.mamba.blocks_per_request
            detail = (f"{lay.mamba_cache_mode.value}: "
                      f"{'2' if lay.mamba.align else '1'} + {lay.mamba.spec_blocks} speculative"
                      + (f" + {lay.mamba.checkpoint_blocks} prefill checkpoint"
                         if lay.mamba.align and lay.mamba.checkpoint_blocks else ""))
        rows.append(LedgerRow(component=f"group {i} ({group.kind}, {group.num_layers} layers)",
                              count=blocks, unit_bytes=lay.bytes_per_block, detail=detail))
    return Ledger(name="per request (max_model_len)", per="request", rows=tuple(rows))


def lost_per_request_ledger(lay: VllmLayout) -> Ledger:
    rows: list[LedgerRow] = []
    memo: list[LedgerRow] = []
    size = lay.group_size
    tokens, _ = _rank_tokens(lay)
    for group in lay.groups:
        if group.kind == "attention":
            blocks = cdiv(tokens, lay.block_tokens)
            tail = blocks * lay.block_tokens - tokens
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
                kernel_tail = cdiv(tokens, kernel) * kernel - tokens
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
        unused = lay.bytes_per_block - lay.group_bytes(group)
        if not unused:
            continue
        if lay.indexer is None and group.num_layers < size:  # one page size: whole layers
            rows.append(LedgerRow(component=f"padding layers ({group.kind} group of "
                                            f"{group.num_layers} < {size})",
                                  count=blocks * (size - group.num_layers),
                                  unit_bytes=lay.page_bytes, detail="block slots never written"))
        else:  # mixed pages: a block id spans the widest group's bytes in every group
            rows.append(LedgerRow(component=f"unused block bytes ({group.kind} group of "
                                            f"{group.num_layers})",
                                  count=blocks, unit_bytes=unused,
                                  detail=f"{lay.bytes_per_block:,} B per block − "
                                         f"{lay.group_bytes(group):,} B of pages"))
    return Ledger(name="lost per request (max_model_len)", per="request", rows=tuple(rows),
                  memo=tuple(memo))


def lost_per_rank_ledger(cap: VllmCapacity) -> Ledger:
    rows = [LedgerRow(component="memory past the last whole block", count=1,
                      unit_bytes=cap.unallocated_bytes,
                      detail=f"available mod {cap.bytes_per_block:,} B"),
            LedgerRow(component="null block", count=1, unit_bytes=cap.bytes_per_block,
                      detail="BlockPool holds block 0 back")]
    if cap.trimmed_blocks:
        rows.append(LedgerRow(component="blocks past the smallest stage's count",
                              count=cap.trimmed_blocks, unit_bytes=cap.bytes_per_block,
                              detail=f"{cap.own_num_blocks:,} fit, every stage gets "
                                     f"{cap.num_blocks:,} (get_kv_cache_configs)"))
    return Ledger(name="lost per rank", per="rank", rows=tuple(rows))


def vllm_ledgers(lay: VllmLayout, capacity: VllmCapacity, memory: KVMemory) -> VllmLedgers:
    return VllmLedgers(per_block=per_block_ledger(lay), per_request=per_request_ledger(lay),
                       lost_per_request=lost_per_request_ledger(lay),
                       lost_per_rank=lost_per_rank_ledger(capacity),
                       memory=Ledger(name="KV cache memory", per="rank", rows=memory.rows()))
