"""`kvledger plan --engine sglang,vllm`: one table, one column per engine, same model and GPU.

Rows: tokens (SGLang's max_total_num_tokens; vLLM's logged GPU KV cache size and its
attention token slots), concurrency (SGLang's max_running_requests, requests of any length;
vLLM's maximum concurrency at max_model_len), then the like-for-like figure: requests of one
length held at once by each (at --context, else each engine's context length) and what runs
out first there; state slots (SGLang's mamba pool; vLLM's blocks), bytes lost to padding or
reservation, the binding constraint, and with a workload whether it fits on each.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from kvledger.core.engines import Engine
from kvledger.core.envelope import envelope, schema_name
from kvledger.core.plan import ContextFit, EnginePlan
from kvledger.sglang.plan import SglangPlan
from kvledger.vllm.plan import VllmPlan

SCHEMA = schema_name("engines")


def by_engine(plans: tuple[EnginePlan, ...]) -> tuple[SglangPlan, VllmPlan]:
    """The SGLang and the vLLM plan of `plans`, in that order, whichever order was asked."""
    engines = {plan.engine: plan for plan in plans}
    assert len(plans) == 2 and set(engines) == {Engine.SGLANG, Engine.VLLM}, \
        "side by side needs one SGLang and one vLLM plan"
    return engines[Engine.SGLANG], engines[Engine.VLLM]  # type: ignore[return-value]


def _sglang_lost(plan: SglangPlan) -> int:
    cap = plan.capacity
    # the padding state slot and token page, plus what flooring left
    return cap.slot_bytes + cap.token_bytes * plan.layout.page_tokens + cap.unused_bytes


def _fits(fit: ContextFit) -> str:
    return f"{fit.per_worker:,} × {fit.context_tokens:,} tokens"


def side_by_side_rows(sglang: SglangPlan, vllm: VllmPlan) -> list[tuple[str, str, str]]:
    """Per rank, or per worker (SGLang: attention-DP worker; vLLM: DP engine). The like-for-like
    concurrency is `requests … at once`: both engines at the workload's --context, else each at
    its own context length."""
    s, v = sglang.capacity, vllm.capacity
    vl = vllm.layout
    context = sglang.workload.context_tokens if sglang.workload else None
    s_fit, v_fit = sglang.fit_at(context), vllm.fit_at(context)
    at = f"{context:,} tokens" if context else "the context length"
    rows = [
        ("rules", sglang.layout.rules.name, vl.rules.name),
        ("memory for the cache per rank (GiB)", f"{s.rest_bytes / 2**30:,.2f}",
         f"{v.available_bytes / 2**30:,.2f}"),
        ("context / max_model_len", f"{sglang.layout.context_tokens:,}", f"{vl.max_model_len:,}"),
        ("page / block (tokens)", f"{sglang.layout.page_tokens}", f"{vl.block_tokens}"),
        ("tokens (as logged)", f"{s.max_total_tokens:,}", f"{v.logged_tokens:,}"),
        ("token slots in the pool", f"{s.max_total_tokens:,}", f"{v.num_blocks * vl.block_tokens:,}"),
        ("concurrent requests", f"{s.max_running_requests:,}",
         f"{v.max_concurrency:.2f}x at {vl.max_model_len:,} tokens"),
        (f"requests at {at}, at once (per worker)", _fits(s_fit), _fits(v_fit)),
        (f"first to run out at {at}", s_fit.binding.label, v_fit.binding.label),
        ("state slots / blocks", f"{s.state_slots:,}", f"{v.num_blocks:,} blocks"),
        ("bytes lost to padding or reservation", f"{_sglang_lost(sglang):,}", f"{vllm.lost_bytes:,}"),
        ("binding constraint", s.binding.value, v.binding),
    ]
    if sglang.workload is not None:
        fits = ("yes" if sglang.fits(None, None) else "NO", "yes" if vllm.fits(None, None) else "NO")
        requests = sglang.workload.requests
        rows.append((f"workload fits ({requests:,} × {sglang.workload.context_tokens:,} tokens)",
                     *fits))
    return rows


def render_side_by_side(plans: tuple[EnginePlan, ...], console: Console) -> None:
    sglang, vllm = by_engine(plans)
    table = Table(title=f"{sglang.model.name} on "
                        f"{sglang.gpu.name if sglang.gpu else 'the given memory'}: SGLang vs vLLM "
                        "(per rank)", title_justify="left")
    table.add_column("quantity")
    table.add_column("SGLang", justify="right")
    table.add_column("vLLM", justify="right")
    for row in side_by_side_rows(sglang, vllm):
        table.add_row(*row)
    console.print(table)
    for note in (*(f"sglang: {n}" for n in sglang.notes), *(f"vllm: {n}" for n in vllm.notes)):
        console.print(f"note: {note}", style="yellow", highlight=False)


def side_by_side_json(plans: tuple[EnginePlan, ...],
                      ignored: tuple[str, ...] = ()) -> dict[str, Any]:
    sglang, vllm = by_engine(plans)
    notes = [*(f"sglang: {n}" for n in sglang.notes), *(f"vllm: {n}" for n in vllm.notes)]
    return envelope("engines", {
        "rows": [{"quantity": q, "sglang": a, "vllm": b}
                 for q, a, b in side_by_side_rows(sglang, vllm)],
        "sglang": sglang.to_json(ignored), "vllm": vllm.to_json(ignored)},
        ignored_flags=ignored, notes=notes)
