"""`kvledger report`: one self-contained HTML page — plan tables, the article's figures, and,
given a workload, the simulation results. Figures are inline SVG; no script, no external file.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape

from kvledger import __version__
from kvledger.report.figures import draw_all
from kvledger.report.figures.canvas import svg_text
from kvledger.report.html_tables import (
    capacity_table,
    host_tables,
    ledger_table,
    sim_tables,
    totals_table,
    workload_table,
)
from kvledger.report.show import UNITS_LEGEND, show_fraction, show_ms
from kvledger.sglang.plan import SglangPlan
from kvledger.sglang.plan_json import plan_notes
from kvledger.sim.replay import SimResult

CSS = """
body { font-family: system-ui, sans-serif; max-width: 1100px; margin: 2em auto; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.85em; }
caption { text-align: left; font-weight: 600; padding: 0.3em 0; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: right; }
th:first-child, td:first-child, th:nth-child(2), td:nth-child(2) { text-align: left; }
figure { margin: 1.5em 0; } figure svg { max-width: 100%; height: auto; }
figcaption { font-size: 0.85em; color: #555; }
.note { color: #8a6d00; font-size: 0.9em; }
"""


def _figures(plan: SglangPlan, result: SimResult | None) -> tuple[list[str], list[str]]:
    plan_parts, sim_parts = [], []
    for item in draw_all(plan, result):
        target = sim_parts if item.spec.stem.startswith("sim_") else plan_parts
        if item.figure is None:
            target.append(f'<p class="note">{escape(item.spec.stem)}: {escape(item.skipped or "")}</p>')
            continue
        target.append(f'<figure id="{item.spec.stem}">{svg_text(item.figure)}'
                      f"<figcaption>{escape(item.spec.caption)}</figcaption></figure>")
    return plan_parts, sim_parts


@dataclass(frozen=True, slots=True, kw_only=True)
class Provenance:
    """What wrote the page: the version, the command line and when (UTC, ISO 8601)."""

    version: str = __version__
    command_line: str = ""
    written_at: str = ""

    @classmethod
    def now(cls, argv: list[str]) -> Provenance:
        return cls(command_line=shlex.join(["kvledger", *argv]),
                   written_at=datetime.now(UTC).isoformat(timespec="seconds"))


def render_report(plan: SglangPlan, result: SimResult | None = None,
                  ignored: tuple[str, ...] = (), provenance: Provenance | None = None) -> str:
    """The whole page: every table `kvledger plan` prints, the figures, the simulation."""
    lay, dep, model = plan.layout, plan.layout.deployment, plan.model
    plan_figs, sim_figs = _figures(plan, result)
    # the ledgers `kvledger plan` prints, in its order (weights when kvledger estimated them)
    ledgers = [plan.ledgers.token, plan.ledgers.draft_token, plan.ledgers.state,
               plan.ledgers.request,
               plan.ledgers.weights if plan.weights_estimated else None, plan.capacity.side,
               plan.capacity.verify]
    head = (f"{model.num_layers} layers = {model.num_full_layers} full ({model.attn.value}) + "
            f"{model.num_linear_layers} linear; rules {lay.rules.name}; tp {dep.tp_size}, "
            f"dp {dep.dp_size}, attn_tp {dep.attn_tp_size}; KV {dep.kv_cache_dtype.value}, "
            f"page {lay.page_tokens}, context {lay.context_tokens:,}")
    notes = [*plan_notes(plan), *(f"ignored flag: {flag}" for flag in ignored)]
    made = provenance or Provenance()
    stamp = (f"kvledger {made.version}" + (f"; written {made.written_at}" if made.written_at
                                           else "")
             + (f"; command: {made.command_line}" if made.command_line else ""))
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>kvledger report: {escape(model.name)}</title><style>{CSS}</style></head><body>",
        f"<h1>kvledger report: {escape(model.name)}</h1>", f"<p>{escape(head)}</p>",
        f'<p class="provenance"><code>{escape(stamp)}</code></p>',
        *(f'<p class="note">note: {escape(n)}</p>' for n in notes),
        "<h2>Ledgers</h2>", *(ledger_table(led) for led in ledgers if led is not None and led.rows),
        "<h2>Capacity</h2>", capacity_table(plan), totals_table(plan),
        *([f'<h2 id="workload">Workload check</h2>{work}'] if (work := workload_table(plan))
          else []),
        *(["<h2>Host tier</h2>", *hosts] if (hosts := host_tables(plan)) else []),
        "<h2>Figures</h2>", *plan_figs,
    ]
    if result is not None:
        s = result.summary
        parts += [
            f'<h2 id="simulation">Simulation: {escape(s.workload)}</h2>',
            f"<p>{s.num_requests:,} requests, {s.counters.finished:,} finished, "
            f"{len(s.unfinished):,} unfinished; {show_ms(s.duration_ms)} simulated; token "
            f"hit rate {show_fraction(s.counters.token_hit_rate)}, usable hit rate "
            f"{show_fraction(s.counters.usable_hit_rate)}; binding ledger: "
            f"{escape(s.binding.value) if s.binding else 'none'}.</p>",
            sim_tables(s), *(f'<p class="note">note: {escape(n)}</p>' for n in s.notes), *sim_figs,
        ]
    parts.append(f'<p class="note">units: {escape(UNITS_LEGEND)}</p>')
    parts.append("</body></html>")
    return "\n".join(parts)
