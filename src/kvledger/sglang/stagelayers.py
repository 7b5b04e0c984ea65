"""Pipeline stages (`--pp-size`): which decoder layers each stage owns, and what PP forces.

Followed (sglang 0.5.21 and 0.5.23 wheels, python/sglang/srt/):
1. distributed/utils.py `get_pp_indices`: stage r of p owns [start, end) of the
   `num_hidden_layers` decoder layers; with L = q·p + m, the first p − m stages get q layers
   and the last m get q + 1 (SGLANG_PP_LAYER_PARTITION, an environment override, is not read).
2. arg_groups/overrides.py `_pipeline_parallel_overlap_disable`: PP turns the overlap
   scheduler off ("Pipeline parallelism is incompatible with overlap schedule"), so
   extra_buffer reserves 3 + 1 state slots per request instead of 3 + 2.
3. arg_groups/validation_hook.py `check_pipeline_parallel_compat`: with speculative decoding
   only EAGLE (NEXTN) is accepted, and only on prefill nodes ("PP + speculative decoding
   (MTP) is only supported on prefill nodes (disaggregation-mode=prefill)").
4. arg_groups/parallel_hook.py: "PP is not supported with context parallelism"
   (`kvledger.sglang.deploy` refuses --attn-cp-size > 1 with PP).

A stage's model is the model cut to its layers (`stage_model`): its token ledger counts its
own full layers, its state ledger its own linear layers. How the stages share K, T and N is
`kvledger.sglang.stages`.

>>> pp_indices(45, 0, 4), pp_indices(45, 3, 4)
((0, 11), (33, 45))
"""

from __future__ import annotations

from dataclasses import replace

from kvledger.model.arch import LayerKind, ModelArch
from kvledger.sglang.deploy import Deployment, DeploymentError, SpecAlgorithm


def pp_indices(num_layers: int, pp_rank: int, pp_size: int) -> tuple[int, int]:
    """[start, end) of stage `pp_rank`, as `get_pp_indices` splits `num_layers`.

    >>> [pp_indices(10, r, 3) for r in range(3)]
    [(0, 3), (3, 6), (6, 10)]
    """
    assert 0 <= pp_rank < pp_size, f"stage {pp_rank} of {pp_size}"
    base, remainder = divmod(num_layers, pp_size)
    if pp_rank >= pp_size - remainder:  # the last `remainder` stages take one layer more
        start = pp_rank * (base + 1) - (pp_size - remainder)
        return start, start + base + 1
    return pp_rank * base, pp_rank * base + base


def stage_model(model: ModelArch, pp_rank: int, pp_size: int) -> ModelArch:
    """The model cut to stage `pp_rank`'s layers; refused when a stage caches no token."""
    start, end = pp_indices(model.num_layers, pp_rank, pp_size)
    layers = tuple(layer for layer in model.layers if start <= layer.index < end)
    if not any(layer.kind is LayerKind.FULL for layer in layers):
        raise DeploymentError(
            f"--pp-size {pp_size}: stage {pp_rank} owns layers {start}..{end - 1} of "
            f"{model.name}, none of them full attention; kvledger sizes a token pool per stage "
            "and needs at least one (use fewer stages)")
    return replace(model, layers=layers, num_decoder_layers=end - start)


def check_stage_count(model: ModelArch, pp_size: int) -> None:
    if pp_size > model.num_layers:
        raise DeploymentError(f"--pp-size {pp_size}: {model.name} has only "
                              f"{model.num_layers} decoder layers to split")


def resolve_stages(dep: Deployment) -> tuple[Deployment, list[str]]:
    """PP's forced settings and refusals (module doc, 2 and 3)."""
    notes: list[str] = []
    if dep.pp_size == 1:
        return dep, notes
    if dep.speculative:
        algorithm = dep.speculative_algorithm
        if algorithm not in (None, SpecAlgorithm.EAGLE):
            raise DeploymentError(
                f"--pp-size {dep.pp_size} with --speculative-algorithm {algorithm.value}: SGLang "
                "refuses it (\"Pipeline parallelism currently only supports EAGLE "
                "(non-multi-layer) speculative decoding\")")
        if not dep.disaggregation_mode.is_prefill:
            raise DeploymentError(
                f"--pp-size {dep.pp_size} with speculative decoding: SGLang refuses it (\"PP + "
                "speculative decoding (MTP) is only supported on prefill nodes "
                "(disaggregation-mode=prefill)\")")
    if not dep.disable_overlap_schedule:
        notes.append(f"--pp-size {dep.pp_size}: SGLang turns the overlap scheduler off "
                     "(_pipeline_parallel_overlap_disable)")
        dep = replace(dep, disable_overlap_schedule=True)
    return dep, notes
