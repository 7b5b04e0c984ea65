"""check-log's outputs: the JSON document and the table, from one Reconciliation.

JSON (`kvledger.check-log/1`): engine, version, rules, model, rows (line, quantity, logged,
kvledger, status, reason), derived, binding, verdict (`reconciles` | `differs` |
`incomplete`), missing (the lines the engine prints for this deployment that the log lacks:
text, why), reconciles (true only for the verdict `reconciles`).
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from kvledger.logs.reconcile import Reconciliation, Status, Verdict


def checklog_doc(result: Reconciliation) -> dict[str, Any]:
    return {
        "engine": result.engine.value,
        "version": result.version, "rules": result.rules, "model": result.model,
        "rows": [{"line": r.line_no, "quantity": r.quantity, "logged": r.logged,
                  "kvledger": r.kvledger, "status": r.status.value, "reason": r.reason}
                 for r in result.rows],
        "derived": dict(result.derived), "binding": result.binding,
        "verdict": result.verdict.value,
        "missing": [{"text": m.text, "why": m.why} for m in result.missing],
        "reconciles": result.verdict is Verdict.RECONCILES}


def verdict_text(result: Reconciliation) -> Text:
    match result.verdict:
        case Verdict.RECONCILES:
            return Text("every logged number reconciles, and the log has every line the engine "
                        "prints for this deployment", style="bold green")
        case Verdict.DIFFERS:
            return Text(f"{len(result.differs)} logged number(s) differ", style="bold red")
        case Verdict.INCOMPLETE:
            return Text(f"incomplete: {len(result.missing)} line(s) the engine prints for this "
                        "deployment are missing, so the log cannot be called reconciled "
                        "(the numbers it shows agree)", style="bold red")


def print_checklog(console: Console, result: Reconciliation) -> None:
    title = (f"{result.engine.value} {result.version or '(version not logged)'} — "
             f"{result.model}, rules {result.rules}")
    table = Table(title=title, title_justify="left")
    for col in ("line", "logged number", "logged", "kvledger", "status"):
        table.add_column(col, justify="right" if col in ("line", "logged", "kvledger") else "left")
    for r in result.rows:
        style = "bold red" if r.status is Status.DIFFERS else None
        status = r.status.value + (f": {r.reason}" if r.reason else "")
        table.add_row(str(r.line_no), r.quantity, r.logged, r.kvledger, Text(status, style=style))
    for m in result.missing:
        table.add_row("—", m.text, "—", "—", Text(f"MISSING: {m.why}", style="bold red"))
    console.print(table)
    for name, value in result.derived:
        console.print(f"  {name}: {value}", highlight=False)
    console.print(Text(f"binding constraint (never logged): {result.binding}", style="bold"))
    for note in result.notes:
        console.print(f"note: {note}", style="yellow", highlight=False)
    console.print(verdict_text(result))
