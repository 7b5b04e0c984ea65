"""Pipeline stages: which decoder layers a stage's workers hold, and their share of each group.

1. `get_pp_indices` (vllm/distributed/utils.py): stage r of p owns [start, end) of the layers
   the model class hands `make_layers` (model_executor/models/utils.py; `num_hidden_layers`,
   Nemotron-H's `len(hybrid_override_pattern)`, kvledger's `ModelArch.num_layers` both). With
   L = q·p + m the m extra layers go to the stages before the last, the last stage's
   neighbour first (`partitions[-i] += 1` for i in 2..m+1): the last stage carries the final
   norm and lm_head. (SGLang gives them to the last stages, `kvledger.sglang.stagelayers`.)
   VLLM_PP_LAYER_PARTITION, an environment override, is not read.
2. A worker registers only its stage's layers (the rest are `PPMissingLayer`s), so its
   `get_kv_cache_spec` holds those; `get_kv_cache_configs` (v1/core/kv_cache_planning.py)
   groups the layers of the whole model (`get_global_kv_cache_groups`, layers[i::n] within a
   bucket) and projects the groups onto each worker (`_project_kv_cache_groups_to_worker`):
   every group stays, holding the worker's own layers of it (possibly none). A stage's layout
   is the model's with those projected groups (`stage_layout`); its bytes per block follow
   from them, its blocks per request do not (every group still takes its blocks).

>>> [pp_indices(32, r, 3) for r in range(3)]
[(0, 11), (11, 22), (22, 32)]
>>> [pp_indices(61, r, 4) for r in range(4)]
[(0, 15), (15, 30), (30, 46), (46, 61)]
>>> [pp_indices(48, r, 5) for r in range(5)]
[(0, 9), (9, 19), (19, 29), (29, 39), (39, 48)]
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvledger.vllm.layout import VllmLayout


@dataclass(frozen=True, slots=True)
class StageRange:
    """Pipeline stage `pp_rank`: decoder layers [start_layer, end_layer)."""

    pp_rank: int
    start_layer: int
    end_layer: int

    def holds(self, layer_index: int) -> bool:
        return self.start_layer <= layer_index < self.end_layer


def pp_indices(num_layers: int, pp_rank: int, pp_size: int) -> tuple[int, int]:
    """[start, end) of stage `pp_rank`, as vLLM's `get_pp_indices` splits `num_layers`."""
    assert 0 <= pp_rank < pp_size, f"stage {pp_rank} of {pp_size}"
    partitions = [num_layers // pp_size] * pp_size
    for i in range(2, num_layers % pp_size + 2):
        partitions[-i] += 1
    start = sum(partitions[:pp_rank])
    return start, start + partitions[pp_rank]


def stage_layout(lay: VllmLayout, pp_rank: int) -> VllmLayout:
    """The layout of stage `pp_rank`'s workers: every group kept, with the stage's layers.

    A sparse-MLA group's indexer caches go with their MLA layers; a block-outermost layout
    keeps its block-stride rounding while the stage holds an MLA layer (the latent and
    indexer specs bring it; state layers have none)."""
    pp = lay.deployment.pipeline_parallel_size
    stage = StageRange(pp_rank, *pp_indices(lay.model.num_layers, pp_rank, pp))
    groups = []
    for group in lay.groups:
        own = tuple(i for i in group.layers if stage.holds(i))
        groups.append(replace(group, num_layers=len(own), layers=own))
    mla = [layer for layer in lay.model.full_layers if stage.holds(layer.index)]
    indexers = sum(layer.has_indexer for layer in mla) if lay.indexer is not None else 0
    return replace(lay, groups=tuple(groups), num_indexer_layers=indexers, stage=stage,
                   block_stride_alignment_bytes=lay.block_stride_alignment_bytes if mla else 1)
