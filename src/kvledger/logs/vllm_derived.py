"""What a vLLM log never prints: the binding constraint and the layout behind the numbers.

With pipeline stages the bytes per block are each stage's own (`kvledger.vllm.stages`):
`PP0 360,448 / PP1 360,448 / PP2 327,680` for Llama-3.1-8B at tp 2 over 3 stages.
"""

from __future__ import annotations

from kvledger.logs.reconcile import span
from kvledger.vllm.layout import VllmLayout
from kvledger.vllm.stages import stage_layout


def binding(lay: VllmLayout, blocks: list[int]) -> str:
    per_request = lay.blocks_per_request()
    seqs = lay.deployment.max_num_seqs
    if seqs < blocks[0] / per_request:
        return f"--max-num-seqs {seqs}"
    return (f"KV-cache blocks: {per_request} per max_model_len request "
            f"({'1' if lay.mamba is None or not lay.mamba.align else '2'} state block(s) per "
            f"group, block {lay.block_tokens} tokens)")


def derived(lay: VllmLayout, blocks: list[int]) -> tuple[tuple[str, str], ...]:
    return (
        ("attention block size (tokens)", f"{lay.block_tokens:,}"),
        ("page (bytes, every layer)", f"{lay.page_bytes:,}"),
        ("KV-cache groups", " + ".join(f"{g.num_layers} {g.kind}" for g in lay.groups)),
        ("bytes per block", f"{lay.bytes_per_block:,}" if lay.stage is None
         and lay.deployment.pipeline_parallel_size == 1 else " / ".join(
             f"PP{r} {stage_layout(lay, r).bytes_per_block:,}"
             for r in range(lay.deployment.pipeline_parallel_size))),
        ("num_gpu_blocks", span([f"{b:,}" for b in blocks])),
        ("blocks per max_model_len request", f"{lay.blocks_per_request():,}"),
        ("mamba_cache_mode", lay.mamba_cache_mode.value if lay.mamba_cache_mode else "—"),
    )
