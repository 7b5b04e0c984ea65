"""Pipeline stages: vLLM's layer split and each stage's share of the KV-cache groups.

Sources (vLLM 0.33.0 and 0.24.0, files under vllm/): distributed/utils.py `get_pp_indices`
(the same in both), model_executor/models/utils.py `make_layers`, v1/core/kv_cache_planning.py
`_get_kv_cache_groups_uniform_page_size` (layers[i::n]), `_get_packed_kv_cache_groups`
(pattern_repeats[i::n]) and `_project_kv_cache_groups_to_worker`. Every per-stage count below
is vLLM's own, recorded in tests/data/oracle/vllm-0.33.0-scale-out.jsonl (`stages`).
"""

from __future__ import annotations

import pytest

from kvledger.core.gpus import get_gpu
from kvledger.model.config import load_model
from kvledger.vllm.deploy import VllmDeployment
from kvledger.vllm.layout import vllm_layout
from kvledger.vllm.rules import RULES
from kvledger.vllm.stages import pp_indices, stage_layout


@pytest.mark.parametrize("layers,pp,split", [
    (32, 3, [11, 11, 10]),  # the remainder goes to the stages before the last
    (61, 4, [15, 15, 16, 15]),  # one extra layer: the last stage's neighbour
    (48, 5, [9, 10, 10, 10, 9]),  # three: partitions[-2], [-3], [-4]
    (45, 2, [23, 22]),
    (45, 4, [11, 11, 12, 11]),
    (4, 4, [1, 1, 1, 1]),
])
def test_pp_indices_is_get_pp_indices(layers, pp, split):
    ranges = [pp_indices(layers, r, pp) for r in range(pp)]
    assert [end - start for start, end in ranges] == split
    assert ranges[0][0] == 0 and ranges[-1][1] == layers
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:], strict=False))


def _stages(model: str, gpu: str = "H200", **deploy):
    lay = vllm_layout(load_model(model), VllmDeployment(**deploy), RULES["vllm-0.33"],
                      get_gpu(gpu))
    return [stage_layout(lay, r) for r in range(lay.deployment.pipeline_parallel_size)]


def test_a_hybrid_stage_keeps_every_group_with_its_own_layers():
    # Qwen3-Next (48 layers, every 4th full attention) over 5 stages of 9/10/10/10/9 layers:
    # 12 attention + 36 GDN layers in 4 groups of 12; a stage holds 2–3 layers of each.
    stages = _stages("qwen3-next-80b-a3b-instruct", tensor_parallel_size=1,
                     pipeline_parallel_size=5)
    assert [len(s.groups) for s in stages] == [4] * 5
    assert [sum(g.num_layers for g in s.groups) for s in stages] == [9, 10, 10, 10, 9]
    # each stage's widest group holds 3 layers of 576 tokens × 2,048 B (2 KV heads × K, V ×
    # 256 × 2 B): vLLM records 3,538,944 B per block on all five
    assert {max(g.num_layers for g in s.groups) for s in stages} == {3}
    assert {s.bytes_per_block for s in stages} == {3 * 576 * 2_048} == {3_538_944}


def test_sparse_mla_stages_carry_their_indexer_caches():
    # DeepSeek-V3.2 at TP 4 over 4 stages (15/15/16/15 layers): one group of MLA latents
    # (64 × 576 × 2 B = 73,728 B) and indexer caches (64 × 132 B = 8,448 B); stage 2 holds 16.
    stages = _stages("deepseek-v3.2", tensor_parallel_size=4, pipeline_parallel_size=4)
    assert [s.num_indexer_layers for s in stages] == [15, 15, 16, 15]
    assert [s.bytes_per_block for s in stages] == [15 * 82_176, 15 * 82_176, 1_314_816,
                                                   15 * 82_176]


def test_glm_5_3_flash_stages_project_the_packed_groups():
    # GLM-5.3-Flash at TP 4 on an H200 over 2 stages (23/22 layers): vLLM's groups per stage
    # (in its counting an attention group lists latent and indexer caches, and the kpool tail
    # is a group of its own): [5, 5, 4, 4, 10, 5] and [4, 4, 4, 4, 12, 6], 6,116,352 and
    # 7,332,864 B per block.
    stages = _stages("glm-5.3-flash", tensor_parallel_size=4, pipeline_parallel_size=2)
    assert [[g.num_layers for g in s.groups] for s in stages] == [[5, 5, 4, 4, 5],
                                                                 [4, 4, 4, 4, 6]]
    assert [s.num_indexer_layers for s in stages] == [5, 6]
    assert [s.bytes_per_block for s in stages] == [6_116_352, 7_332_864]
    assert [s.blocks_per_request() for s in stages] == [924, 924]  # every group stays


def test_a_stage_range_is_recorded_on_its_layout():
    stage = _stages("llama-3.1-8b", tensor_parallel_size=2, pipeline_parallel_size=3)[2].stage
    assert (stage.pp_rank, stage.start_layer, stage.end_layer) == (2, 22, 32)
    assert stage.holds(22) and not stage.holds(32)
