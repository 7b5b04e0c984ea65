"""A pipeline-parallel SGLang boot log (`--pp-size p`): every stage's pools, row by row.

Each stage's scheduler tags its lines with its stage (`[… PP1 TP0]`, kvledger.logs.tags) and
builds pools of its own layers (kvledger.sglang.stages, from kv_cache_configurator.py):
`KV Cache is allocated. #tokens: T, K size: …` logs the pipeline's T (the MIN over stages) with
the stage's own bytes per token, `Mamba Cache is allocated` the pipeline's K with the stage's
own linear layers. So every stage's sizes are checked against that stage's layout, and every
stage's counts against the pipeline's. The `Load weight end` memory is each rank's own; SGLang
sizes every stage from the smallest (`get_available_gpu_memory(distributed=True)` over the
world group), which is the one the scan keeps.

Lines without a stage tag (a paste stripped of its prefixes) are checked against the binding
stage's layout, with a note.

Example: GLM-5.3-Flash at pp 2 splits 45 layers 22/23; stage 0 holds 4 full layers and 18
linear ones, stage 1 holds 5 and 18, so stage 1's K size at the same T is 5/4 of stage 0's.
"""

from __future__ import annotations

from dataclasses import replace

from kvledger.logs.lines import LogScan
from kvledger.logs.reconcile import Row
from kvledger.logs.sglang_rows import Caps, pool_rows, token_bytes
from kvledger.sglang.plan import SglangPlan
from kvledger.sglang.resolve import CacheLayout
from kvledger.sglang.stagelayers import stage_model


def stage_layouts(lay: CacheLayout, plans: tuple[SglangPlan, ...] | None
                  ) -> list[CacheLayout]:
    """Every stage's layout: the plan's when memory is known, else `lay` cut per stage."""
    if plans is not None and plans[0].pipeline is not None:
        return [s.layout for s in plans[0].pipeline.stages]
    pp = lay.deployment.pp_size
    return [replace(lay, model=stage_model(lay.model, r, pp)) for r in range(pp)]


def _stage_caps(plans: tuple[SglangPlan, ...] | None, pp_rank: int) -> Caps | None:
    if plans is None or any(p.pipeline is None for p in plans):
        return None
    return tuple(p.pipeline.stages[pp_rank].capacity for p in plans if p.pipeline is not None)


def stage_pool_rows(scan: LogScan, lay: CacheLayout,
                    plans: tuple[SglangPlan, ...] | None, unknown: str,
                    notes: list[str]) -> list[Row]:
    """Pool rows of every stage the log tags; `lay` is the whole model's (or, with plans,
    any stage's: the stages' own come from the plans)."""
    layouts = stage_layouts(lay, plans)
    pp = len(layouts)
    tagged = sorted(scan.stages)
    beyond = [r for r in tagged if r >= pp]
    if beyond:
        notes.append(f"the log tags stage(s) {', '.join(f'PP{r}' for r in beyond)} but the "
                     f"deployment has {pp} stages: those lines are not checked")
    rows: list[Row] = []
    for r in (r for r in tagged if r < pp):
        rows += pool_rows(scan.stage(r), layouts[r], _stage_caps(plans, r), unknown,
                          label=f"PP{r}: ")
    if not tagged:
        binding = (plans[0].pipeline.binding_stage
                   if plans is not None and plans[0].pipeline is not None else 0)
        notes.append(f"pp {pp}: the log's pool lines carry no PP tag; they are checked "
                     f"against stage {binding}'s layout")
        rows += pool_rows(scan, layouts[binding], _stage_caps(plans, binding), unknown,
                          label=f"PP{binding}: ")
    return rows


def stage_derived(lay: CacheLayout, plans: tuple[SglangPlan, ...] | None
                  ) -> list[tuple[str, str]]:
    """Each stage's layers and bytes per token."""
    out = []
    for r, stage in enumerate(stage_layouts(lay, plans)):
        m = stage.model
        out.append((f"PP{r}: full + linear layers, token bytes",
                    f"{m.num_full_layers} + {m.num_linear_layers}, {token_bytes(stage):,}"))
    return out
