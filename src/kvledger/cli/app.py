"""The typer application every command module registers on, and the error edge.

One convention for every command, as SGLang's own argparse parser behaves:
- an unambiguous prefix of an option is that option (`--avail 80`, `--speculative-algo`);
  an ambiguous or unknown one exits 2 with a did-you-mean (`kvledger.sglang.launch.spellings`),
  and so does a prefix of a flag that kvledger ignores (`simulate --engine` is no
  --engine-info-bootstrap-port): a flag is never silently dropped;
- SGLang's and vLLM's spellings of one flag are both read, whichever engine plans
  (`--max-model-len` = --context-length, `--tp` = --tensor-parallel-size);
- every numeric option is held to its range before any work starts (`cli.bounds`), and a
  value that does not parse names the option and what it expects;
- `-h` / `--help` on every command, `kvledger --version`; help is never cut: piped, it is
  printed PIPE_HELP_WIDTH columns wide;
- every error is one line, `error: <flag or field>: <what was expected>`, on stderr;
- exit status 0 on success, 1 when a check fails (`--check`, `verify`, `pools`), 2 for bad
  input or a missing optional dependency (the message names the extra to install).
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Annotated, Any

import typer
import typer.rich_utils
from rich.console import Console
from rich.markup import escape
from typer.core import TyperCommand, TyperGroup

from kvledger import __version__
from kvledger.cli.bounds import check_option
from kvledger.cli.reading import BadValue, bad_value, expand_words
from kvledger.core.extras import MissingExtra

# Piped output is not a terminal: rich would wrap and truncate tables to 80 columns. A wide
# virtual line keeps every cell whole (tables take their natural width, no padding).
PIPE_WIDTH = 100_000
# Help boxes fill the width they are given, so piped help gets a fixed width at which no
# option name or unbroken word of any command is cut (the widest needs ~110 columns).
PIPE_HELP_WIDTH = 160
# A value echoed in an error is cut to this many characters (a 100 KB --model is one word).
MAX_SHOWN_WORD = 200


def _is_terminal(stream: object) -> bool:
    # A closed stream is None (`kvledger plan >&-`); cli.streams reports it.
    return stream is not None and stream.isatty()


def _console(*, stderr: bool) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr, width=None if _is_terminal(stream) else PIPE_WIDTH)


console = _console(stderr=False)
err_console = _console(stderr=True)


def _shorten(match: re.Match[str]) -> str:
    word = match.group()
    return f"{word[:80]}…({len(word) - 100:,} more characters)…{word[-20:]}"


def print_error(message: str) -> None:
    # The message is text, not markup: `kvledger[memory]` must print as written. However a
    # value got into it, an error line stays a line.
    message = re.sub(rf"\S{{{MAX_SHOWN_WORD + 1},}}", _shorten, message)
    err_console.print(f"[red]error:[/] {escape(message)}", soft_wrap=True, highlight=False)


class KvGroup(TyperGroup):
    """The top-level group: click's usage errors printed in the one error style.

    Only typer's public names are used: `typer.TyperException` is the base of every error
    the parser raises (usage errors among them carry the `ctx` they arose in).
    """

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        if not args and self.no_args_is_help and not ctx.resilient_parsing:
            typer.echo(ctx.get_help(), err=True, color=ctx.color)
            raise typer.Exit(2)
        return super().parse_args(ctx, args)

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             **extra: Any) -> Any:
        # The words after the program name, for documents that record their command line.
        self.invocation = list(sys.argv[1:] if args is None else args)
        if (not _is_terminal(sys.stdout) and "TERMINAL_WIDTH" not in os.environ
                and "COLUMNS" not in os.environ):
            typer.rich_utils.MAX_WIDTH = PIPE_HELP_WIDTH  # read by every help console
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except typer.TyperException as exc:
            print_error(exc.format_message())
            if (usage := getattr(exc, "ctx", None)) is not None:
                # the program may be `python -m kvledger`: the words after the root's name
                words = usage.command_path.removeprefix(usage.find_root().info_name or "")
                err_console.print(f"see `kvledger{words} -h`", highlight=False)
            code = exc.exit_code
        except typer.Abort:
            code = 1
        if not standalone_mode:
            return code
        sys.exit(code if isinstance(code, int) else 0)


class KvCommand(TyperCommand):
    """A command whose options are read as argparse reads them: exact spelling, else the one
    option (its own, or an SGLang flag when it takes deployment flags) the word begins."""

    takes_deployment = False

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        words = self.expand(args)
        try:
            rest = super().parse_args(ctx, list(words))  # click consumes the list
        except typer.BadParameter as exc:
            raise bad_value(exc, words) from None
        for param in self.params:
            flag = next((o for o in param.opts if o.startswith("--")), None)
            if flag is not None and param.name in ctx.params:
                try:
                    check_option(flag, ctx.params[param.name])
                except ValueError as exc:
                    raise BadValue(str(exc)) from None
        return rest

    def _own_options(self) -> dict[str, bool]:
        """Long option → whether it takes a value."""
        own = {"--help": False}
        # self.params, not get_params(): that would cache a help option built for a context
        # without the command's -h.
        for param in self.params:
            if param.param_type_name != "option":
                continue
            takes_value = not (getattr(param, "is_flag", False) or getattr(param, "count", False))
            for opt in (*param.opts, *param.secondary_opts):
                if opt.startswith("--"):
                    own[opt] = takes_value
        return own

    def expand(self, args: list[str]) -> list[str]:
        return expand_words(args, self._own_options(), deployment=self.takes_deployment)


class DeploymentCommand(KvCommand):
    """A command that also takes SGLang deployment flags (or a pasted launch command)."""

    takes_deployment = True


def command_line(ctx: typer.Context) -> list[str]:
    """The arguments this run was given (after `kvledger`)."""
    return list(getattr(ctx.find_root().command, "invocation", []))


def _version(value: bool) -> None:
    if value:
        console.print(f"kvledger {__version__}", highlight=False)
        raise typer.Exit()


app = typer.Typer(
    cls=KvGroup,
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},  # = HELP, for the group
    help="Byte-exact KV-cache ledgers, capacity plans and a reference memory system for "
    "hybrid LLMs.",
)


@app.callback()
def _root(version: Annotated[bool, typer.Option(
        "--version", help="Print the version and exit.", is_eager=True,
        callback=_version)] = False) -> None:
    """Byte-exact KV-cache ledgers, capacity plans and a reference memory system."""


# Commands that take SGLang deployment flags accept them as extra arguments (or after `--`
# as a pasted launch command), parsed by kvledger.sglang.launch.
HELP = {"help_option_names": ["-h", "--help"]}
EXTRA_ARGS = {"allow_extra_args": True, "ignore_unknown_options": True, **HELP}


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn the library's input errors into one red line and exit status 2."""
    try:
        yield
    except (ValueError, OSError, MissingExtra) as exc:
        print_error(str(exc))
        raise typer.Exit(2) from None


def _strict_json(doc: Any) -> str:
    try:
        return json.dumps(doc, indent=2, allow_nan=False)
    except ValueError as exc:
        err_console.print(f"[red]error:[/] output holds a non-finite number ({exc})",
                          soft_wrap=True, highlight=False)
        raise typer.Exit(1) from None


def emit_json(doc: Any) -> None:
    """Strict JSON on stdout: a NaN or an infinity is a bug upstream (inputs are bounded), so
    it fails loudly (exit 1) rather than print `NaN`, which is not JSON."""
    sys.stdout.write(_strict_json(doc) + "\n")


def check_finite(doc: Any) -> None:
    """Before a table shows the numbers of `doc`: the same refusal as `emit_json`'s, so no
    output prints `inf` or `nan` either."""
    _strict_json(doc)


def command(*, help: str, epilog: str | None = None,  # noqa: A002 (typer's name)
            deployment: bool = True) -> Callable:
    """Register a command; with `deployment` it also accepts SGLang deployment flags."""
    if deployment:
        return app.command(cls=DeploymentCommand, context_settings=EXTRA_ARGS, help=help,
                           epilog=epilog)
    return app.command(cls=KvCommand, context_settings=HELP, help=help, epilog=epilog)
