"""`kvledger check-log FILE|-`: reconcile a boot log number by number; exit 0, 1 or 2."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from kvledger.cli.app import HELP, KvCommand, app, console, emit_json, print_error
from kvledger.cli.options.plan import JsonOpt
from kvledger.core.inputs import check_regular, read_capped
from kvledger.core.limits import MAX_LOG_BYTES

FileArg = Annotated[str, typer.Argument(help="The boot log, or - for standard input.")]
ModelOpt = Annotated[str | None, typer.Option(
    "--model", help="Model config when the log names none kvledger can read (embedded name, "
    "repo id, config.json).")]
RulesOpt = Annotated[str | None, typer.Option(
    "--rules", help="Rule set when the log names no version (vllm-0.13, vllm-0.33, sglang-…).")]
GpuOpt = Annotated[str | None, typer.Option("--gpu", help="GPU from the catalogue, where the "
                                            "block size depends on it.")]


# A boot log is read whole: capped, so an endless pipe ends with an error, not a MemoryError.
TOO_LONG = "a boot log is its first lines (`head -n 5000 LOG | kvledger check-log -`)"


def _read(path: str) -> str:
    if path == "-":
        if sys.stdin is None:  # `kvledger check-log - <&-`
            raise ValueError("-: standard input is closed; pipe the log in or give its file")
        data = read_capped(sys.stdin.buffer, "standard input", MAX_LOG_BYTES, TOO_LONG)
    else:
        file = Path(path)
        check_regular(path, file)  # a FIFO would block, a device never end
        with file.open("rb") as handle:
            data = read_capped(handle, path, MAX_LOG_BYTES, TOO_LONG)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text (byte {exc.start})") from None


@app.command("check-log", cls=KvCommand, context_settings=HELP, help="Reconcile an SGLang or vLLM boot log with kvledger's rules: "
             "one row per logged number; exit 0 when all reconcile, 1 when one differs, 2 when "
             "the log cannot be read.")
def check_log_cmd(file: FileArg, model: ModelOpt = None, rules: RulesOpt = None,
                  gpu: GpuOpt = None, json: JsonOpt = False) -> None:
    from kvledger.logs.check import check_log

    try:
        result = check_log(_read(file), model=model, rules=rules, gpu=gpu)
    except (ValueError, OSError) as exc:
        print_error(str(exc))
        raise typer.Exit(2) from None
    if json:
        from kvledger.report.envelope import envelope

        emit_json(envelope("check-log", {
            "engine": result.engine.value,
            "version": result.version, "rules": result.rules, "model": result.model,
            "rows": [{"line": r.line_no, "quantity": r.quantity, "logged": r.logged,
                      "kvledger": r.kvledger, "status": r.status.value, "reason": r.reason}
                     for r in result.rows],
            "derived": dict(result.derived), "binding": result.binding,
            "reconciles": not result.differs}, notes=result.notes))
    else:
        title = (f"{result.engine.value} {result.version or '(version not logged)'} — "
                 f"{result.model}, rules {result.rules}")
        table = Table(title=title, title_justify="left")
        for col in ("line", "logged number", "logged", "kvledger", "status"):
            table.add_column(col, justify="right" if col in ("line", "logged", "kvledger") else "left")
        for r in result.rows:
            style = "bold red" if r.status.value == "DIFFERS" else None
            status = r.status.value + (f": {r.reason}" if r.reason else "")
            table.add_row(str(r.line_no), r.quantity, r.logged, r.kvledger, Text(status, style=style))
        console.print(table)
        for name, value in result.derived:
            console.print(f"  {name}: {value}", highlight=False)
        console.print(Text(f"binding constraint (never logged): {result.binding}", style="bold"))
        for note in result.notes:
            console.print(f"note: {note}", style="yellow", highlight=False)
        verdict = ("every logged number reconciles" if not result.differs else
                   f"{len(result.differs)} logged number(s) differ")
        console.print(Text(verdict, style="bold green" if not result.differs else "bold red"))
    raise typer.Exit(result.exit_code)
