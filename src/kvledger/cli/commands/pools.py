"""`kvledger pools`: allocate one rank's device pools and set their bytes beside the ledgers'."""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from kvledger.cli.app import command, console, emit_json, print_error, user_errors
from kvledger.cli.options.groups import option_group
from kvledger.cli.options.plan import JsonOpt, PlanInputs, plan_from
from kvledger.core.limits import check_allocation
from kvledger.sglang.launch import flags_help

if TYPE_CHECKING:
    from kvledger.pools.accounting import PoolBytes
    from kvledger.sglang.plan import SglangPlan


class PoolDevice(Enum):
    CPU = "cpu"
    CUDA = "cuda"
    META = "meta"  # shapes only: full-size pools that own no memory


DeviceOpt = Annotated[PoolDevice, typer.Option(
    "--device", help="Where to allocate: cpu, cuda, or meta (full size, no memory).")]
FullOpt = Annotated[bool, typer.Option(
    "--full", help="Allocate the full plan on cpu too (default there: a laptop-sized build of "
    "1,024 tokens and one request's state slots; caps given as SGLang flags are kept).")]


def _counts(plan: SglangPlan) -> dict[str, int]:
    cap = plan.capacity
    return {"max_total_tokens": cap.max_total_tokens, "state_slots": cap.state_slots,
            "max_running_requests": cap.max_running_requests,
            "page_tokens": plan.layout.page_tokens}


def _rows_json(rows: tuple[PoolBytes, ...]) -> list[dict[str, Any]]:
    return [{"pool": r.pool, "tensors": r.tensors, "allocated_bytes": r.allocated_bytes,
             "predicted_bytes": r.predicted_bytes, "matches": r.matches,
             "derivation": r.derivation} for r in rows]


def _table(title: str, rows: tuple[PoolBytes, ...]) -> Table:
    table = Table(title=title)
    for col, justify in (("pool", "left"), ("tensors", "left"), ("allocated B", "right"),
                         ("ledger B", "right"), ("", "center"), ("ledger row × count", "left")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for r in rows:
        table.add_row(r.pool, r.tensors, f"{r.allocated_bytes:,}", f"{r.predicted_bytes:,}",
                      "[green]=[/]" if r.matches else "[red]≠[/]", r.derivation)
    alloc, pred = sum(r.allocated_bytes for r in rows), sum(r.predicted_bytes for r in rows)
    table.add_row("total", "", f"{alloc:,}", f"{pred:,}", "=" if alloc == pred else "≠", "")
    return table


@command(help="Allocate the device pools of one rank (HybridLinearKVPool, index keys, state "
         "pool, request rows) and print the bytes allocated next to the bytes the ledgers "
         "predict. Takes the same model and SGLang deployment options as `kvledger plan`.",
         epilog=flags_help())
@option_group(PlanInputs, "inputs")
def pools(ctx: typer.Context, inputs: PlanInputs, device: DeviceOpt = PoolDevice.CPU, full: FullOpt = False, json: JsonOpt = False) -> None:
    from kvledger.core.envelope import envelope
    from kvledger.core.extras import MEMORY

    with user_errors():
        MEMORY.require("kvledger pools (device pools)")
        from kvledger.pools.accounting import account
        from kvledger.pools.build import ScaleDown, build_pools

        plan, ignored = plan_from(inputs, ctx.args)
        scaled = device is PoolDevice.CPU and not full
        if device is PoolDevice.CPU and full:
            # Size the build on "meta" (no memory) and check it against this machine first.
            need = sum(r.allocated_bytes for r in account(build_pools(plan, "meta")))
            check_allocation(f"pools --full on cpu ({plan.model.name})", need,
                             "use --device meta for the full size, or drop --full")
        built = build_pools(plan, device.value, ScaleDown.laptop(plan) if scaled else None)
        built.check_integrity()
        rows = account(built)
        full_rows = account(build_pools(plan, "meta")) if scaled else None
    ok = all(r.matches for r in rows) and all(r.matches for r in full_rows or ())
    if json:
        emit_json(envelope("pools", {
            "model": plan.model.name, "rules": plan.layout.rules.name, "device": device.value,
            "scaled": scaled, "built": _counts(built.plan), "planned": _counts(plan),
            "pools": _rows_json(rows),
            "total": {"allocated_bytes": sum(r.allocated_bytes for r in rows),
                      "predicted_bytes": sum(r.predicted_bytes for r in rows)},
            "full_size": None if full_rows is None else _rows_json(full_rows),
            "all_match": ok,
        }, ignored_flags=ignored, notes=plan.notes))
    else:
        counts = _counts(built.plan)
        where = f"{device.value}, scaled down" if scaled else device.value
        console.print(_table(f"{plan.model.name} on {where}: T {counts['max_total_tokens']:,}, "
                             f"K {counts['state_slots']:,}, N {counts['max_running_requests']:,}",
                             rows))
        if full_rows is not None:
            console.print(_table("full size (meta device, no memory)", full_rows))
    if not ok:
        print_error("allocated bytes differ from the ledger")
        raise typer.Exit(1)
