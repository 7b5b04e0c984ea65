"""Rich tables of `simulate --engine vllm` and of `--engine sglang,vllm` side by side."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.table import Table

from kvledger.report.show import show_ms, show_share
from kvledger.report.vllm_sim_json import EngineRow
from kvledger.sim.vllm_summary import VllmSimSummary


def vllm_sim_table(s: VllmSimSummary) -> Table:
    table = Table(title=f"vLLM prefix cache on {s.workload}: {s.num_blocks - 1:,} blocks of "
                  f"{s.block_tokens} tokens, a state costs {s.num_mamba_groups}; "
                  f"max_num_seqs {s.max_num_seqs}, max_num_batched_tokens "
                  f"{s.max_num_batched_tokens:,}", title_justify="left")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("of prompt", justify="right")
    p = s.prompt_tokens
    table.add_row("requests finished / offered", f"{s.finished:,} / {s.num_requests:,}", "")
    table.add_row("prompt tokens (finished requests)", f"{p:,}", "100 %")
    table.add_row("KV hit (token hit rate)", f"{s.hit_tokens:,}", show_share(s.hit_tokens, p))
    table.add_row("usable hit: KV with a state (usable hit rate)", f"{s.usable_hit_tokens:,}",
                  show_share(s.usable_hit_tokens, p))
    table.add_row("prefill computed (recomputation included)", f"{s.prefill_tokens:,}",
                  show_share(s.prefill_tokens, p))
    table.add_row("evicted: KV blocks / states", f"{s.evicted_kv_blocks:,} / "
                  f"{s.evicted_states:,}", "")
    table.add_row("preemptions (recompute)", f"{s.preemptions:,}", "")
    lat = s.latency
    if lat is not None:
        table.add_row("TTFT p50 / p95", f"{show_ms(lat.ttft_ms.p50)} / "
                      f"{show_ms(lat.ttft_ms.p95)}", "")
        table.add_row("TPOT p50 / p95", f"{show_ms(lat.tpot_ms.p50)} / "
                      f"{show_ms(lat.tpot_ms.p95)}", "")
        table.add_row("output tokens/s", f"{lat.output_tokens_per_s:,.1f}", "")
    table.add_row("steps / simulated time", f"{s.steps:,} / {show_ms(s.duration_ms)}", "")
    table.caption = f"time model: {s.timing}"
    table.caption_justify = "left"
    return table


def engines_table(rows: Sequence[EngineRow], *, workload: str, timing: str) -> Table:
    table = Table(title=f"Engines on {workload}, one deployment memory", title_justify="left",
                  box=box.SIMPLE_HEAD, show_edge=False)
    table.add_column("engine", no_wrap=True)
    for name in ("token\nhit", "usable\nhit", "TTFT\np50", "TTFT\np95", "TPOT\np50",
                 "KV tokens\nevicted", "states\nevicted", "output\ntok/s", "finished"):
        table.add_column(name, justify="right")
    for r in rows:
        def ms(v: float | None) -> str:
            return "—" if v is None else show_ms(v)
        name = f"{r.engine} (saturated)" if r.saturated else r.engine
        table.add_row(name, f"{r.token_hit:.3f}", f"{r.usable_hit:.3f}", ms(r.ttft_p50_ms),
                      ms(r.ttft_p95_ms), ms(r.tpot_p50_ms), f"{r.evicted_kv_tokens:,}",
                      f"{r.evicted_states:,}", f"{r.output_tokens_per_s:,.1f}", f"{r.finished:,}")
    table.caption = ("pools: " + "; ".join(f"{r.engine} {r.pool}" for r in rows)
                     + f". Both timed by one model: {timing}")
    if any(r.saturated for r in rows):
        table.caption += (". (saturated): the run's queue grows, so its TTFT/TPOT measure the "
                          "backlog, not the cache; compare hit rates, or lower the rate "
                          "(--time-scale)")
    table.caption_justify = "left"
    return table
