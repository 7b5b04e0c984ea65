"""`kvledger check-log FILE|-`: reconcile a boot log number by number; exit 0, 1 or 2.

0: complete and every number equal; 1: a number differs, or a line the engine prints for this
deployment is missing (verdict `differs` / `incomplete`); 2: the log cannot be read."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from kvledger.cli.app import (
    EXTRA_ARGS,
    KvCommand,
    app,
    command_line,
    console,
    emit_json,
    print_error,
)
from kvledger.cli.options.plan import JsonOpt
from kvledger.core.inputs import check_regular, read_capped
from kvledger.core.limits import MAX_LOG_BYTES

FileArg = Annotated[str, typer.Argument(help="The boot log, or - for standard input.")]
ModelOpt = Annotated[str | None, typer.Option(
    "--model", help="Model config when the log names none kvledger can read (embedded name, "
    "repo id, config.json).")]
RulesOpt = Annotated[str | None, typer.Option(
    "--rules", help="Rule set when the log names no version (vllm-0.13 … vllm-0.33, sglang-…).")]
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


@app.command("check-log", cls=KvCommand, context_settings=EXTRA_ARGS, help="Reconcile an SGLang or vLLM boot log with kvledger's rules: "
             "one row per logged number, and one per line the engine prints for the deployment that "
             "the log lacks; exit 0 when the log is complete and every number reconciles, 1 when "
             "a number differs or an expected line is missing (the verdict says which), 2 when "
             "the log cannot be read. Deployment flags the paste lacks go after `--`, in the "
             "engine's spelling: `kvledger check-log LOG --model M -- --tp 8 --kv-cache-dtype "
             "fp8_e4m3`.")
def check_log_cmd(ctx: typer.Context, file: FileArg, model: ModelOpt = None,
                  rules: RulesOpt = None, gpu: GpuOpt = None, json: JsonOpt = False) -> None:
    from kvledger.logs.check import check_log

    try:
        if ctx.args and "--" not in command_line(ctx):
            raise ValueError(f"{ctx.args[0]}: not a check-log option; deployment flags go "
                             "after `--` (kvledger check-log LOG -- --tp 8)")
        result = check_log(_read(file), model=model, rules=rules, gpu=gpu,
                           flags=tuple(ctx.args))
    except (ValueError, OSError) as exc:
        print_error(str(exc))
        raise typer.Exit(2) from None
    if json:
        from kvledger.core.envelope import envelope
        from kvledger.report.checklog_view import checklog_doc

        emit_json(envelope("check-log", checklog_doc(result), notes=result.notes))
    else:
        from kvledger.report.checklog_view import print_checklog

        print_checklog(console, result)
    raise typer.Exit(result.exit_code)
