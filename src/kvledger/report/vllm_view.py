"""Rich rendering of a VllmPlan: layer specs, groups, block ledgers, the bytes lost, capacity,
and with pipeline stages one row per stage."""

from __future__ import annotations

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from kvledger.report.plan_view import binding_line, ledger_table
from kvledger.report.show import UNITS_LEGEND, show_bytes
from kvledger.vllm.plan import VllmPlan


def layout_table(plan: VllmPlan) -> Table:
    lay = plan.layout
    table = Table(title="vLLM layer specs and KV-cache groups (per rank)", title_justify="left")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    att = lay.attention
    kind = ("fp8_ds_mla row" if att.fp8_ds_mla else "MLA latent") if att.mla else f"{att.num_kv_heads} KV heads × 2 × {att.head_size}"
    table.add_row("attention bytes per token per layer", f"{att.bytes_per_token:,} ({kind}, "
                  f"{att.itemsize} B)")
    if lay.mamba is not None and lay.alignment is not None:
        al = lay.alignment
        table.add_row("Mamba state page (real)", f"{lay.mamba.real_page_bytes:,}")
        table.add_row("block granule (tokens)", f"{al.granule_tokens}")
        table.add_row("attention block size (tokens)",
                      f"{al.block_tokens} (raised from {al.requested_block_tokens})"
                      if al.raised else f"{al.block_tokens}")
        table.add_row("Mamba page padding", f"{al.mamba_padding_bytes:,} B ({al.padding_pct:.2f} %)")
        table.add_row("mamba_cache_mode / prefix caching",
                      f"{lay.mamba_cache_mode.value} / {'on' if lay.prefix_caching else 'off'}")
    else:
        table.add_row("block size (tokens)", f"{lay.block_tokens}")
    own_state_page = lay.mamba is not None and lay.mamba.page_bytes != lay.page_bytes
    table.add_row("page (bytes, every layer)" if lay.indexer is None else
                  "latent page (bytes, every MLA layer)" if own_state_page else
                  "latent page (bytes, every MLA and state layer)", f"{lay.page_bytes:,}")
    if own_state_page:
        assert lay.mamba is not None
        table.add_row("state page (bytes, block × the plain latent row)",
                      f"{lay.mamba.page_bytes:,}")
    if lay.indexer is not None:
        table.add_row("indexer page (bytes)",
                      f"{lay.indexer.page_bytes:,} × {lay.num_indexer_layers} layers")
    table.add_row("KV-cache groups", " + ".join(f"{g.num_layers} {g.kind}" for g in lay.groups))
    table.add_row("bytes per block (group size × page)" if lay.indexer is None else
                  "bytes per block (Σ latent and indexer pages)", f"{lay.bytes_per_block:,}")
    return table


def capacity_table(plan: VllmPlan) -> Table:
    cap, lay = plan.capacity, plan.layout
    table = Table(title=f"Capacity per rank ({plan.memory.source.value})", title_justify="left")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    table.add_row("Available KV cache memory", show_bytes(cap.available_bytes))
    table.add_row("num_gpu_blocks", f"{cap.num_blocks:,}")
    table.add_row(f"blocks per request (max_model_len {lay.max_model_len:,})",
                  f"{cap.blocks_per_request:,}")
    table.add_row(Text("Maximum concurrency", style="bold"),
                  Text(f"{cap.max_concurrency:.2f}×", style="bold"))
    table.add_row(f"GPU KV cache size (as logged: {lay.rules.logged_tokens.value})",
                  f"{cap.logged_tokens:,} tokens")
    table.add_row("attention token slots (num_blocks × block)",
                  f"{cap.num_blocks * lay.block_tokens:,}")
    table.add_row("max_num_seqs", f"{cap.max_num_seqs:,}")
    table.add_row("bytes lost (padding, tails, null block, remainder)", show_bytes(plan.lost_bytes))
    return table


def stage_table(plan: VllmPlan) -> Table | None:
    """One row per pipeline stage: its layers and groups, its block, the blocks it could hold
    and the count every stage gets (get_kv_cache_configs' minimum)."""
    pipe = plan.pipeline
    if pipe is None:
        return None
    table = Table(title=f"Pipeline stages — every stage gets the smallest stage's "
                  f"{pipe.num_blocks:,} blocks", title_justify="left")
    for name in ("stage", "layers", "groups (layers on the stage)", "B/block", "blocks alone",
                 "num_gpu_blocks", "pool B", "unallocated blocks"):
        table.add_column(name, justify="left" if name in ("stage", "layers") else "right")
    for s in pipe.stages:
        mark = " ← binds" if s.stage.pp_rank == pipe.binding_stage else ""
        table.add_row(f"PP{s.stage.pp_rank}{mark}", f"{s.stage.start_layer}..{s.stage.end_layer - 1}",
                      " + ".join(str(g.num_layers) for g in s.layout.groups),
                      f"{s.capacity.bytes_per_block:,}", f"{s.capacity.own_num_blocks:,}",
                      f"{s.capacity.num_blocks:,}", show_bytes(s.pool_bytes),
                      f"{s.capacity.trimmed_blocks:,}")
    return table


def _scale_out(plan: VllmPlan) -> str:
    dep = plan.deployment
    words = []
    if (pipe := plan.pipeline) is not None:
        stage = pipe.binding.stage
        words.append(f"pp {dep.pipeline_parallel_size} (per-rank tables: stage PP{stage.pp_rank},"
                     f" layers {stage.start_layer}..{stage.end_layer - 1})")
    if dep.decode_context_parallel_size > 1:
        words.append(f"dcp {dep.decode_context_parallel_size} (a rank holds 1/"
                     f"{dep.decode_context_parallel_size} of each request's tokens)")
    if dep.prefill_context_parallel_size > 1:
        words.append(f"pcp {dep.prefill_context_parallel_size}")
    return "".join(f", {w}" for w in words)


def render_vllm_plan(plan: VllmPlan, console: Console, ignored: tuple[str, ...] = ()) -> None:
    lay, dep, model = plan.layout, plan.layout.deployment, plan.model
    head = (f"[bold]{model.name}[/] ({model.family.value}) under [bold]{lay.rules.name}[/]: "
            f"{model.num_full_layers} attention + {model.num_linear_layers} linear layers; "
            f"tp {dep.tensor_parallel_size}{_scale_out(plan)}, kv {dep.kv_cache_dtype}, "
            f"max_model_len {lay.max_model_len:,}, gpu_memory_utilization "
            f"{dep.gpu_memory_utilization}" + (f", {plan.gpu.name}" if plan.gpu else ""))
    led = plan.ledgers
    parts: list = [head, layout_table(plan),
                   ledger_table(led.memory, "KV cache memory per rank"),
                   ledger_table(led.per_block, "Ledger — per block"),
                   ledger_table(led.per_request, "Ledger — per max_model_len request"),
                   ledger_table(led.lost_per_request, "Bytes lost — per max_model_len request"),
                   ledger_table(led.lost_per_rank, "Bytes lost — per rank"),
                   capacity_table(plan)]
    if table := stage_table(plan):
        parts.append(table)
    notes = [*plan.notes, *(f"ignored flag: {flag}" for flag in ignored)]
    if notes:
        parts.append(Text("\n".join(f"note: {n}" for n in notes), style="yellow"))
    if plan.asked:
        fit = plan.fit_at(plan.context_tokens_asked)
        verdict = "fits" if plan.fits(None, None) else "does NOT fit"
        asked = "" if plan.requests is None else f"{plan.requests:,} × "
        parts.append(Text(f"Workload: {asked}{fit.context_tokens:,} tokens — {verdict}: "
                          f"{fit.requests:,} requests of {fit.context_tokens:,} tokens fit at "
                          f"once over {fit.workers:,} engine(s)",
                          style="bold" if plan.fits(None, None) else "bold red"))
    parts.append(Text(f"{binding_line(plan, plan.context_tokens_asked)}; {UNITS_LEGEND}",
                      style="bold"))
    console.print(Group(*parts))
