"""`simulate --engine vllm --compare`: the table of vLLM's knobs and kvledger's policies, and
its JSON document.

Schema `kvledger.simulate-vllm-compare/1`, inside the common envelope (`core.envelope`)::

    workload, recommendation (one line), recommended{vllm, any} (row labels),
    rows[{label, kind ("vllm" | "kvledger"), flags, block_tokens, num_blocks,
          retention_tokens (null: dense), checkpoint_blocks, admission, eviction,
          finished, token_hit, usable_hit, ttft_ms{p50, p95}, tpot_ms{p50, p95},
          evicted_kv_tokens, evicted_states, preemptions, output_tokens_per_s}]

Latencies are null for a row where nothing finished.
"""

from __future__ import annotations

from typing import Any

from rich import box
from rich.table import Table

from kvledger.blocks.specs import MambaAlignSpec
from kvledger.report.show import show_ms
from kvledger.sim.vllm_compare import VllmCompareRow, VllmComparison


def _retention(row: VllmCompareRow) -> tuple[bool, int | None, int | None]:
    """(has states, retention tokens or None for dense, checkpoint blocks)."""
    s = row.setting
    if not row.summary.num_mamba_groups:
        return False, None, None
    block = row.summary.block_tokens
    retention = None if s.retention_blocks is None else s.retention_blocks * block
    return True, retention, s.checkpoint_blocks


def _row_json(row: VllmCompareRow, checkpoint_default: int | None) -> dict[str, Any]:
    s, lat = row.summary, row.summary.latency
    states, retention, checkpoint = _retention(row)
    return {
        "label": row.label, "kind": "vllm" if row.setting.is_vllm else "kvledger",
        "flags": row.flags, "block_tokens": s.block_tokens, "num_blocks": s.num_blocks,
        "retention_tokens": retention if states else None,
        "checkpoint_blocks": (checkpoint if checkpoint is not None else checkpoint_default)
        if states else None,
        "admission": row.setting.policy.admission.value,
        "eviction": row.setting.policy.eviction.value,
        "finished": s.finished, "token_hit": s.token_hit_rate, "usable_hit": s.usable_hit_rate,
        "ttft_ms": None if lat is None else {"p50": lat.ttft_ms.p50, "p95": lat.ttft_ms.p95},
        "tpot_ms": None if lat is None else {"p50": lat.tpot_ms.p50, "p95": lat.tpot_ms.p95},
        "evicted_kv_tokens": s.evicted_kv_tokens, "evicted_states": s.evicted_states,
        "preemptions": s.preemptions,
        "output_tokens_per_s": lat.output_tokens_per_s if lat else 0.0,
    }


def comparison_body(c: VllmComparison, *, checkpoint_default: int | None) -> dict[str, Any]:
    return {"workload": c.workload, "recommendation": c.recommendation(),
            "recommended": {"vllm": c.best(vllm_only=True).label,
                            "any": c.best(vllm_only=False).label},
            "rows": [_row_json(r, checkpoint_default) for r in c.rows]}


def default_checkpoint_blocks(groups) -> int | None:
    """The prefill kernel's checkpoint blocks in the default run (None: no Mamba group)."""
    return next((g.num_prefill_checkpoint_blocks for g in groups
                 if isinstance(g, MambaAlignSpec)), None)


def comparison_table(c: VllmComparison) -> Table:
    base = c.default.summary
    table = Table(title=f"vLLM's knobs and kvledger's state policies on {c.workload}: one "
                  f"pool of {(base.num_blocks - 1) * base.bytes_per_block / 2**30:,.1f} GiB, "
                  f"a state costs {base.num_mamba_groups} blocks", title_justify="left",
                  box=box.SIMPLE_HEAD, show_edge=False)
    table.add_column("setting", no_wrap=True)
    table.add_column("by")
    for name in ("blocks", "token\nhit", "usable\nhit", "TTFT\np50", "TTFT\np95", "TPOT\np50",
                 "TPOT\np95", "KV tokens\nevicted", "states\nevicted", "finished"):
        table.add_column(name, justify="right")
    pick = c.best(vllm_only=True)
    for r in c.rows:
        s, lat = r.summary, r.summary.latency

        def ms(value: float | None) -> str:
            return "—" if value is None else show_ms(value)

        label = f"[bold]{r.label}[/]" if r is pick else r.label
        table.add_row(label, "vLLM" if r.setting.is_vllm else "kvledger",
                      f"{s.num_blocks - 1:,} × {s.block_tokens}",
                      f"{s.token_hit_rate:.3f}", f"{s.usable_hit_rate:.3f}",
                      ms(lat and lat.ttft_ms.p50), ms(lat and lat.ttft_ms.p95),
                      ms(lat and lat.tpot_ms.p50), ms(lat and lat.tpot_ms.p95),
                      f"{s.evicted_kv_tokens:,}", f"{s.evicted_states:,}",
                      f"{s.finished:,} / {s.num_requests:,}")
    table.caption = (f"time model: {base.timing}. vLLM rows: flags a user can set; kvledger "
                     "rows: state policies on vLLM's cache, on the knobs the label names (not "
                     "in vLLM). "
                     + c.recommendation())
    table.caption_justify = "left"
    return table
