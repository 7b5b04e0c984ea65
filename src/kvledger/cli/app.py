"""The typer application every command module registers on, and the error edge."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import typer
from rich.console import Console

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help="Byte-exact KV-cache ledgers, capacity plans and a reference memory system for "
    "hybrid LLMs.",
)
console = Console()
err_console = Console(stderr=True)

# Commands that take SGLang deployment flags accept them as extra arguments (or after `--`
# as a pasted launch command), parsed by kvledger.launch.
EXTRA_ARGS = {"allow_extra_args": True, "ignore_unknown_options": True}


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn the library's input errors into one red line and exit status 2."""
    try:
        yield
    except (ValueError, OSError) as exc:
        err_console.print(f"[red]error:[/] {exc}", soft_wrap=True, highlight=False)
        raise typer.Exit(2) from None


def emit_json(doc: Any) -> None:
    """Strict JSON on stdout: a NaN or an infinity is a bug upstream (inputs are bounded), so
    it fails loudly (exit 1) rather than print `NaN`, which is not JSON."""
    try:
        text = json.dumps(doc, indent=2, allow_nan=False)
    except ValueError as exc:
        err_console.print(f"[red]error:[/] output holds a non-finite number ({exc})",
                          soft_wrap=True, highlight=False)
        raise typer.Exit(1) from None
    sys.stdout.write(text + "\n")


def command(*, help: str, epilog: str | None = None) -> Callable:  # noqa: A002 (typer's name)
    """Register a command that also accepts SGLang deployment flags as extra arguments."""
    return app.command(context_settings=EXTRA_ARGS, help=help, epilog=epilog)
