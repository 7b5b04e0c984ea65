"""The KV-cache specs of each worker of a pipeline-parallel deployment (used by sizing.py).

A vLLM worker of pipeline stage r builds only the decoder layers `make_layers` gives it
(model_executor/models/utils.py): [start, end) of `get_pp_indices(n, r, pp)`
(distributed/utils.py), where n is what the model class passes (`num_hidden_layers`, or
Nemotron-H's `len(hybrid_override_pattern)`); the layers outside are `PPMissingLayer`s and
register no KV cache. So a worker's `get_kv_cache_spec` holds the specs of its stage's layers
only. Here the whole model's specs are built once (layers.py) and each stage keeps the layers
whose index (`….layers.<i>.…` in the layer name) lies in its range; vLLM's own
`get_pp_indices` decides the ranges.

Workers come in vLLM's rank order, pipeline stage outermost: each stage's spec once per
tensor-parallel (and prefill-context-parallel) rank of the stage, so `get_kv_cache_configs`
sees world_size workers and its first one (the scheduler's) is stage 0's.
"""

from __future__ import annotations

import re

_LAYER_INDEX = re.compile(r"(?:^|\.)layers\.(\d+)\.")

# The layer count each model class gives make_layers, where it is not num_hidden_layers.
_STAGE_LAYERS = {"NemotronHForCausalLM": lambda t: len(t.hybrid_override_pattern)}


def num_stage_layers(vc) -> int:
    text = vc.model_config.hf_text_config
    count = _STAGE_LAYERS.get(vc.model_config.architecture)
    return count(text) if count else text.num_hidden_layers


def layer_index(name: str) -> int:
    match = _LAYER_INDEX.search(name)
    assert match, f"{name}: no decoder-layer index in the layer name"
    return int(match.group(1))


def stage_ranges(vc) -> list[tuple[int, int]]:
    from vllm.distributed.utils import get_pp_indices

    pp = vc.parallel_config.pipeline_parallel_size
    layers = num_stage_layers(vc)
    return [get_pp_indices(layers, rank, pp) for rank in range(pp)]


def worker_specs(vc, specs: dict) -> tuple[list[dict], list[tuple[int, int]]]:
    """(one spec dict per worker, in rank order; each stage's [start, end))."""
    ranges = stage_ranges(vc)
    per_stage = [{name: spec for name, spec in specs.items()
                  if start <= layer_index(name) < end} for start, end in ranges]
    workers_per_stage = vc.parallel_config.world_size // len(ranges)
    return [stage for stage in per_stage for _ in range(workers_per_stage)], ranges
