"""A pipeline-parallel vLLM engine (--pipeline-parallel-size p): every stage's pool, one count.

`get_kv_cache_configs` (vllm/v1/core/kv_cache_planning.py), with each stage's workers holding
their own layers (`kvledger.vllm.stages`):
1. the admission check runs per worker, on its projected groups: its bytes per block × the
   blocks one max_model_len request takes (the same count on every stage: every group stays);
2. each worker's pool is available // its bytes per block;
3. "Change the num_blocks of each rank to the smallest among all ranks": every worker is
   re-planned with the smallest count, so a stage with narrower blocks leaves memory unused;
4. the scheduler plans with the first worker's config (`generate_scheduler_kv_cache_config`),
   so the logged capacity is num_blocks / blocks per request, the same for every stage.
The binding stage is the one with the fewest blocks of its own (the widest blocks, for equal
memory): the first such in rank order. Every stage is given the same KV cache memory (with
--gpu the weights are split evenly over the stages: a simplification, the embeddings sit on
the first stage and the final norm and lm_head on the last).

Llama-3.1-8B at TP 2 over 3 stages (11/11/10 layers; 4 KV heads × 2 × 128 × 2 B × 16 tokens =
32,768 B per layer and block): stages 0 and 1 span 360,448 B a block, stage 2 327,680 B; with
20 GB each, 55,486 blocks for all (stage 2 alone would hold 61,035):

>>> from kvledger.model.config import load_model
>>> from kvledger.vllm.deploy import VllmDeployment
>>> from kvledger.vllm.layout import vllm_layout
>>> from kvledger.vllm.memory import kv_memory
>>> from kvledger.vllm.rules import RULES
>>> lay = vllm_layout(load_model("llama-3.1-8b"), VllmDeployment(
...     tensor_parallel_size=2, pipeline_parallel_size=3), RULES["vllm-0.33"])
>>> pipe = plan_pipeline(lay, kv_memory(kv_cache_memory_bytes=20_000_000_000))
>>> [(s.layout.bytes_per_block, s.capacity.own_num_blocks) for s in pipe.stages]
[(360448, 55486), (360448, 55486), (327680, 61035)]
>>> pipe.num_blocks, pipe.binding_stage, pipe.stages[2].capacity.trimmed_blocks
(55486, 0, 5549)
>>> pipe.stages[2].ledgers.lost_per_rank.rows[-1].total_bytes  # 5,549 × 327,680 B unallocated
1818296320
"""

from __future__ import annotations

from dataclasses import dataclass

from kvledger.vllm.capacity import KVCacheMemoryError, VllmCapacity, admitted_blocks, vllm_capacity
from kvledger.vllm.layout import VllmLayout
from kvledger.vllm.ledgers import VllmLedgers, vllm_ledgers
from kvledger.vllm.memory import KVMemory
from kvledger.vllm.stages import StageRange, stage_layout


@dataclass(frozen=True, slots=True, kw_only=True)
class StagePlan:
    layout: VllmLayout  # cut to the stage's layers (`layout.stage`)
    capacity: VllmCapacity  # num_blocks the smallest stage's; own_num_blocks its own
    ledgers: VllmLedgers  # the stage's own: its block, its lost bytes

    @property
    def stage(self) -> StageRange:
        assert self.layout.stage is not None
        return self.layout.stage

    @property
    def pool_bytes(self) -> int:
        """What one of the stage's workers allocates: num_blocks × its bytes per block."""
        return self.capacity.num_blocks * self.capacity.bytes_per_block


@dataclass(frozen=True, slots=True, kw_only=True)
class VllmPipeline:
    stages: tuple[StagePlan, ...]

    @property
    def num_blocks(self) -> int:
        return self.stages[0].capacity.num_blocks

    @property
    def binding_stage(self) -> int:
        """The stage whose own memory holds the fewest blocks (the min's argument)."""
        return min(self.stages, key=lambda s: (s.capacity.own_num_blocks,
                                               s.stage.pp_rank)).stage.pp_rank

    @property
    def binding(self) -> StagePlan:
        return self.stages[self.binding_stage]

    @property
    def pool_bytes(self) -> int:
        """One worker per stage: Σ over stages of num_blocks × the stage's bytes per block."""
        return sum(s.pool_bytes for s in self.stages)


def _stage_error(stage: StageRange, exc: KVCacheMemoryError) -> KVCacheMemoryError:
    return KVCacheMemoryError(f"pipeline stage {stage.pp_rank} (layers {stage.start_layer}.."
                              f"{stage.end_layer - 1}): {exc}")


def plan_pipeline(lay: VllmLayout, memory: KVMemory) -> VllmPipeline:
    """Every stage's pool and ledgers, in the module doc's order, every stage given `memory`;
    KVCacheMemoryError names the stage."""
    available_bytes = memory.available_bytes
    pp = lay.deployment.pipeline_parallel_size
    assert pp > 1, "plan_pipeline is for --pipeline-parallel-size > 1"
    layouts = [stage_layout(lay, r) for r in range(pp)]
    own = []
    for stage_lay in layouts:  # every worker's admission check first, in rank order
        assert stage_lay.stage is not None
        try:
            own.append(admitted_blocks(stage_lay, available_bytes))
        except KVCacheMemoryError as exc:
            raise _stage_error(stage_lay.stage, exc) from None
    smallest = min(own)
    stages = []
    for stage_lay in layouts:
        cap = vllm_capacity(stage_lay, available_bytes, num_blocks=smallest)
        stages.append(StagePlan(layout=stage_lay, capacity=cap,
                                ledgers=vllm_ledgers(stage_lay, cap, memory)))
    return VllmPipeline(stages=tuple(stages))
