"""A pipeline-parallel vLLM boot log (`--pipeline-parallel-size p`): num_gpu_blocks from every
stage's own memory and block.

Each worker logs its own `Available KV cache memory: X GiB` (v1/worker/gpu_worker.py), tagged
with its stage (`(Worker_PP1_TP0 pid=…)`, kvledger.logs.tags). `get_kv_cache_configs`
(v1/core/kv_cache_planning.py) sizes each worker's pool as its memory // its bytes per block
(the stage's own layers of every group, `kvledger.vllm.stages.stage_layout`), then gives every
worker the smallest count; the engine core logs `GPU KV cache size` once, from that count
(`kvledger.vllm.pipeline`). So the count is the MIN over stages of each stage's own, and the
smallest memory need not be the binding stage: a stage with fewer layers (narrower blocks)
holds more blocks in less memory.

Llama-3.1-8B at tp 2, pp 3 (11/11/10 layers: 360,448 / 360,448 / 327,680 B a block) with 18.02,
18.25 and 17.90 GiB logged: stage 0 holds 53,679 … 53,709 blocks, stage 2 58,638 … 58,671, so
stage 0 binds though stage 2 logged the least memory.
"""

from __future__ import annotations

import math

from kvledger.core.units import GiB
from kvledger.logs.lines import LogScan
from kvledger.logs.reconcile import Row, Status
from kvledger.vllm.layout import VllmLayout
from kvledger.vllm.stages import stage_layout


def block_range(gib: float, per_block: int) -> tuple[int, int, int, int]:
    """(lowest bytes, highest bytes, fewest blocks, most blocks) a two-decimal GiB allows."""
    lo, hi = math.ceil((gib - 0.005) * GiB), math.ceil((gib + 0.005) * GiB) - 1
    return lo, hi, max(lo, 0) // per_block, hi // per_block


def stage_blocks(scan: LogScan, lay: VllmLayout, rows: list[Row], notes: list[str]
                 ) -> list[int] | None:
    """num_gpu_blocks candidates of a pipeline from its stages' memory lines (None when the
    log has no memory line); each stage's line goes to `rows` as an input."""
    pp = lay.deployment.pipeline_parallel_size
    tagged = {r: scan.stage(r).get("vllm_available_gib") for r in range(pp)}
    tagged = {r: f for r, f in tagged.items() if f is not None}
    whole = scan.get("vllm_available_gib")  # the smallest of all: for stages not tagged
    if whole is None:
        return None
    if not tagged:
        notes.append(f"pp {pp}: the log's memory line carries no stage tag; every stage is "
                     "given its memory")
    fewest, most, binding = [], [], {}
    for r in range(pp):
        stage = stage_layout(lay, r)
        fact = tagged.get(r, whole)
        assert fact is not None
        lo, hi, low_blocks, high_blocks = block_range(float(fact.value), stage.bytes_per_block)
        fewest.append(low_blocks)
        most.append(high_blocks)
        binding[r] = high_blocks
        held = "its own line" if r in tagged else "no line of its own: the smallest logged"
        rows.append(Row(line_no=fact.line_no, quantity=f"PP{r}: Available KV cache memory (GiB)",
                        logged=fact.value, kvledger=f"{low_blocks:,} … {high_blocks:,} blocks",
                        status=Status.INPUT,
                        reason=f"{stage.bytes_per_block:,} B per block "
                        f"(layers {stage.stage.start_layer}..{stage.stage.end_layer - 1}; {held})"))
    first = min(binding, key=lambda r: (binding[r], r))
    notes.append(f"pp {pp}: every stage gets the smallest stage's blocks; stage {first} holds "
                 "the fewest of its own")
    return list(range(min(fewest), min(most) + 1))
