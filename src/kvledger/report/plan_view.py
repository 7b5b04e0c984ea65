"""Rich rendering of an SglangPlan: the ledgers, the side buffers, capacity and the binding limit."""

from __future__ import annotations

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from kvledger.core.plan import EnginePlan
from kvledger.core.units import GB
from kvledger.report.show import UNITS_LEGEND, show_bytes, show_ratio, show_size
from kvledger.report.stage_view import stage_table
from kvledger.sglang.ledger import Ledger
from kvledger.sglang.plan import SglangPlan


def ledger_table(ledger: Ledger, title: str) -> Table:
    table = Table(title=title, title_justify="left", show_footer=True)
    table.add_column("component", footer="total")
    table.add_column("detail", style="dim")
    table.add_column("count", justify="right")
    table.add_column("unit bytes", justify="right")
    table.add_column("total bytes", justify="right", footer=f"{ledger.total_bytes:,}")
    for row in ledger.rows:
        table.add_row(row.component, row.detail, f"{row.count:,}", f"{row.unit_bytes:,}",
                      f"{row.total_bytes:,}")
    for row in ledger.memo:
        table.add_row(Text(f"({row.component})", style="italic"), row.detail, f"{row.count:,}",
                      f"{row.unit_bytes:,}", Text(f"({row.total_bytes:,})", style="italic"))
    return table


def slack_share(plan: SglangPlan) -> str:
    """The slack's share as the row's label promises: `1 − 0.9 = 0.1`, not the fraction.

    >>> from kvledger.sglang.plan import make_plan
    >>> from kvledger.sglang.deploy import Deployment
    >>> slack_share(make_plan(deployment=Deployment(tp_size=8, mem_fraction_static=0.9),
    ...                       gpu="H200"))
    '1 − 0.9 = 0.1'
    """
    fraction = plan.capacity.memory.mem_fraction_static
    return f"1 − {fraction:g} = {1 - fraction:.6g}"


def capacity_table(plan: SglangPlan) -> Table:
    cap, lay = plan.capacity, plan.layout
    table = Table(title=f"Capacity per rank ({cap.memory.source})", title_justify="left")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    table.add_column("bytes", justify="right")
    table.add_row("slack (1 − mem_fraction_static)", slack_share(plan), f"{cap.slack_bytes:,}")
    table.add_row("multimodal reservation", "", f"{cap.mm_reservation_bytes:,}")
    table.add_row("rest for the cache", "", f"{cap.rest_bytes:,}")
    if cap.verify_bytes:
        table.add_row(f"verify scratch ({cap.state_budget.verify_requests:,} requests + 1)", "",
                      f"{cap.verify_bytes:,}")
    if cap.slot_bytes:
        table.add_row(f"K state slots (+1 padding; {cap.state_budget.source.value})",
                      f"{cap.state_slots:,}", f"{cap.state_pool_bytes:,}")
    table.add_row(f"T tokens (+{lay.page_tokens} padding, page {lay.page_tokens})",
                  f"{cap.max_total_tokens:,}", f"{cap.token_pool_bytes:,}")
    if lay.deployment.dcp_size > 1:
        table.add_row(f"logical tokens per worker (T × dcp {lay.deployment.dcp_size})",
                      f"{cap.logical_tokens:,}", "")
    table.add_row("unused after flooring", "", f"{cap.unused_bytes:,}")
    table.add_row("side buffers (unbudgeted, from slack)", "", f"{cap.side.total_bytes:,}")
    for limit, n in cap.limits.items():
        mark = ("  ← binds" if limit is cap.binding
                else f"  headroom {show_ratio(n / cap.max_running_requests)}")
        table.add_row(f"N limit: {limit.value}", f"{n:,}", mark)
    table.add_row(Text("N running requests", style="bold"),
                  Text(f"{cap.max_running_requests:,}", style="bold"), "")
    return table


def role_table(plan: SglangPlan) -> Table | None:
    """A prefill/decode server's pools as SGLang allocates them, beside what was charged."""
    role = plan.capacity.role
    if role is None or not role.differs:
        return None
    dep = plan.deployment
    table = Table(title=f"{dep.disaggregation_mode.label.capitalize()} pools per rank: "
                  "allocated vs charged to the budget", title_justify="left")
    for name, justify in (("pool", "left"), ("charged", "right"), ("allocated", "right"),
                          ("unbudgeted bytes", "right")):
        table.add_column(name, justify=justify)
    for name, charged, allocated, extra in (
            ("state slots (incl. padding)", role.charged_state_slots, role.allocated_state_slots,
             role.unbudgeted_state_bytes),
            ("verify rows (incl. padding)", role.charged_verify_rows, role.allocated_verify_rows,
             role.unbudgeted_verify_bytes),
            ("req_to_token rows (side buffer, never budgeted)", role.charged_request_rows, role.allocated_request_rows,
             role.unbudgeted_request_bytes)):
        if charged or allocated:
            table.add_row(name, f"{charged:,}", f"{allocated:,}", f"{extra:,}")
    table.add_row(Text("total unbudgeted (negative: charged, never allocated)", style="bold"),
                  "", "", Text(f"{role.unbudgeted_bytes:,}", style="bold"))
    table.add_row("T had the budget charged the pools as allocated",
                  f"{plan.capacity.max_total_tokens:,}", f"{role.corrected_tokens:,}", "")
    return table


def totals_table(plan: SglangPlan) -> Table:
    tot = plan.totals
    table = Table(title=f"Deployment — {tot.ranks} GPUs, {tot.workers} attention-DP "
                        f"worker{'s' if tot.workers > 1 else ''}", title_justify="left")
    table.add_column("quantity")
    table.add_column("total", justify="right")
    table.add_row("running requests (N × workers)", f"{tot.running_requests:,}")
    table.add_row("tokens (T × workers)", f"{tot.tokens:,}")
    table.add_row("token pools HBM (× GPUs)", show_bytes(tot.token_pool_bytes))
    if tot.state_pool_bytes:
        table.add_row("state pools HBM (× GPUs)", show_bytes(tot.state_pool_bytes))
    if tot.verify_bytes:
        table.add_row("verify scratch HBM (× GPUs)", show_bytes(tot.verify_bytes))
    table.add_row("side buffers HBM (× GPUs)", show_bytes(tot.side_bytes))
    return table


def workload_table(plan: SglangPlan) -> Table | None:
    work = plan.workload
    if work is None:
        return None
    verdict = "fits" if work.fits else f"does NOT fit: {work.first_overflow.ledger} overflows first"
    table = Table(title=f"Workload: {work.requests} × {work.context_tokens:,} tokens "
                        f"({work.requests_per_rank} per rank) — {verdict}", title_justify="left")
    for col in ("ledger", "need", "capacity", "need bytes", "max requests", "fits"):
        table.add_column(col, justify="left" if col == "ledger" else "right")
    for row in work.rows:
        table.add_row(row.ledger, f"{row.need:,}", f"{row.capacity:,}",
                      show_bytes(row.need_bytes) if row.need_bytes else "",
                      f"{row.max_requests:,}", "yes" if row.fits else "NO")
    return table


def host_tables(plan: SglangPlan) -> list[Table]:
    """HiCache host pools and coverage side by side: the article's view and ours."""
    host = plan.host
    if host is None:
        return []
    how = (f"{host.mode.value} {host.ratio:g}" if host.ratio is not None
           else f"{host.mode.value} {host.size_bytes / GB:g} GB (1e9 B) = {show_size(host.size_bytes)}")
    if host.state_share is not None:
        how += f", --hicache-state-share {host.state_share:g} (what-if, not SGLang)"
    pools = Table(title=f"Host tier (HiCache) per rank — {how}", title_justify="left")
    pools.add_column("host ledger")
    for view in host.views:
        pools.add_column(f"{view.rules.name}", justify="right")
    names = dict.fromkeys(row.component for view in reversed(host.views) for row in view.pools.rows)
    pools.add_row("bytes per token", *(f"{v.per_token.total_bytes:,}" for v in host.views))
    for name in names:
        cells = []
        for view in host.views:
            row = next((r for r in view.pools.rows if r.component == name), None)
            cells.append("—" if row is None else f"{row.count:,} × {row.unit_bytes:,} = {row.total_bytes:,}")
        pools.add_row(name, *cells)
    pools.add_row(Text("total host bytes", style="bold"),
                  *(Text(show_bytes(v.pools.total_bytes), style="bold") for v in host.views))
    coverage = Table(title="What the host tier covers", title_justify="left")
    coverage.add_column("device object")
    for view in host.views:
        coverage.add_column(view.rules.name)
    for obj in dict.fromkeys(o for view in reversed(host.views) for o in view.coverage):
        coverage.add_row(obj.label(plan.layout.kv_row), *(v.coverage[obj].value for v in host.views))
    return [pools, coverage]


def render_plan(plan: SglangPlan, console: Console, ignored: tuple[str, ...] = ()) -> None:
    lay, dep, model = plan.layout, plan.layout.deployment, plan.model
    head = (
        f"[bold]{model.name}[/] ({model.family.value}): {model.num_layers} layers = "
        f"{model.num_full_layers} full ({model.attn.value}) + {model.num_linear_layers} linear"
        f"\nrules {lay.rules.name}; tp {dep.tp_size}, dp {dep.dp_size}, attn_tp {dep.attn_tp_size}, "
        f"kv {dep.kv_cache_dtype.value}, page {lay.page_tokens}, context {lay.context_tokens:,}"
    )
    if dep.mamba_ssm_dtype is not None:
        head += (f", state {dep.mamba_ssm_dtype.value}, {dep.mamba_strategy.value}, overlap "
                 f"{'on' if lay.overlap else 'off'}")
    head += f"; {dep.disaggregation_mode.label}"
    if dep.dcp_size > 1:
        head += (f", dcp {dep.dcp_size}: T physical per rank, T × {dep.dcp_size} per worker, "
                 f"allocation page {lay.allocation_page_tokens}")
    if (pipe := plan.pipeline) is not None:
        stage = pipe.stages[pipe.binding_stage]
        head += (f", pp {dep.pp_size}: per-rank tables are stage PP{stage.pp_rank} "
                 f"(layers {stage.start_layer}..{stage.end_layer - 1})")
    parts: list = [head]
    parts.append(ledger_table(plan.ledgers.token, "Ledger 1 — per token (B/token, all full layers)"))
    if plan.ledgers.draft_token:
        parts.append(ledger_table(plan.ledgers.draft_token, "MTP draft layers — per token"))
    if plan.ledgers.state.rows:
        parts.append(ledger_table(plan.ledgers.state, "Ledger 2 — per state slot (B/slot)"))
    request = plan.ledgers.request
    parts.append(ledger_table(request, f"Ledger 3 — per request ({show_size(request.total_bytes)})"))
    if plan.ledgers.weights and plan.weights_estimated:
        weights = plan.ledgers.weights
        parts.append(ledger_table(weights, f"Weights per rank, estimated "
                                           f"({show_size(weights.total_bytes)})"))
    side = plan.capacity.side
    parts.append(ledger_table(side, f"Side buffers per rank ({show_size(side.total_bytes)})"))
    if verify := plan.capacity.verify:
        parts.append(ledger_table(verify, "Verify scratch per rank (speculative decoding)"))
    parts.append(capacity_table(plan))
    if table := role_table(plan):
        parts.append(table)
    if table := stage_table(plan):
        parts.append(table)
    parts.append(totals_table(plan))
    if table := workload_table(plan):
        parts.append(table)
    parts.extend(host_tables(plan))
    notes = [*plan.notes, *(plan.host.notes if plan.host else ()), *(f"ignored flag: {flag}" for flag in ignored)]
    if notes:
        parts.append(Text("\n".join(f"note: {n}" for n in notes), style="yellow"))
    context = plan.workload.context_tokens if plan.workload else None
    parts.append(Text(f"{binding_line(plan, context)}; "
                      f"usable cache {show_size(plan.capacity.rest_bytes)} per rank; "
                      f"{UNITS_LEGEND}", style="bold"))
    console.print(Group(*parts))


def binding_line(plan: EnginePlan, context_tokens: int | None) -> str:
    """The footer's binding constraint, for the workload asked: what runs out first for
    requests of that length (then the engine's own request limit), else the plan's."""
    if context_tokens is None:
        return f"binding constraint: {plan.binding.label}"
    fit = plan.fit_at(context_tokens)
    return (f"binding constraint for {context_tokens:,}-token requests: {fit.binding.label} "
            f"({fit.per_worker:,} per worker); request limit: {plan.binding.label}")
