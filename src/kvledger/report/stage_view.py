"""The pipeline-stage table of an SGLang plan with --pp-size > 1: one row per stage.

Each stage's layers, its own per-token and per-slot bytes, the state bytes it is charged
(the largest stage's share), the tokens its own budget would hold and the T all stages
share (the minimum), and the state it over-reserves (`kvledger.sglang.stages`).
"""

from __future__ import annotations

from rich.table import Table

from kvledger.sglang.plan import SglangPlan


def stage_table(plan: SglangPlan) -> Table | None:
    pipe = plan.pipeline
    if pipe is None:
        return None
    table = Table(title=f"Pipeline stages — state charged at the largest stage's share "
                  f"({pipe.charged_slot_bytes:,} B/slot); T = min over stages",
                  title_justify="left")
    for name in ("stage", "layers", "full", "linear", "B/token", "own B/slot", "T alone", "T",
                 "K", "N", "token pool B", "state pool B (allocated)", "over-reserved B"):
        table.add_column(name, justify="left" if name in ("stage", "layers") else "right")
    for s in pipe.stages:
        cap = s.capacity
        mark = " ← binds" if s.pp_rank == pipe.binding_stage else ""
        table.add_row(f"PP{s.pp_rank}{mark}", f"{s.start_layer}..{s.end_layer - 1}",
                      str(s.num_full_layers), str(s.num_linear_layers), f"{cap.token_bytes:,}",
                      f"{s.own_slot_bytes:,}", f"{s.alone_tokens:,}", f"{cap.max_total_tokens:,}",
                      f"{cap.state_slots:,}", f"{cap.max_running_requests:,}",
                      f"{cap.token_pool_bytes:,}", f"{s.allocated_state_pool_bytes:,}",
                      f"{s.over_reserved_state_bytes:,}")
    return table
