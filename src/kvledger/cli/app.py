"""The typer application every command module registers on, and the error edge.

One convention for every command, as SGLang's own argparse parser behaves:
- an unambiguous prefix of an option is that option (`--avail 80`, `--speculative-algo`);
  an ambiguous or unknown one exits 2 with a did-you-mean (`kvledger.sglang.launch.spellings`);
- `-h` / `--help` on every command, `kvledger --version`;
- every error is one line, `error: <flag or field>: <what was expected>`, on stderr;
- exit status 0 on success, 1 when a check fails (`--check`, `verify`, `pools`), 2 for bad
  input or a missing optional dependency (the message names the extra to install).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperCommand, TyperGroup

from kvledger import __version__
from kvledger.core.extras import MissingExtra
from kvledger.sglang.launch.spellings import SGLANG_SPELLINGS, UnknownFlag, read_flag
from kvledger.vllm.flags import VLLM_SPELLINGS

# Piped output is not a terminal: rich would wrap and truncate tables to 80 columns. A wide
# virtual line keeps every cell whole (tables take their natural width, no padding).
PIPE_WIDTH = 100_000


def _console(*, stderr: bool) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr, width=None if stream.isatty() else PIPE_WIDTH)


console = _console(stderr=False)
err_console = _console(stderr=True)


def print_error(message: str) -> None:
    # The message is text, not markup: `kvledger[memory]` must print as written.
    err_console.print(f"[red]error:[/] {escape(message)}", soft_wrap=True, highlight=False)


class FlagSpellingError(typer.TyperException):
    """An option word that names no option, or more than one (exit status 2, as argparse)."""

    exit_code = 2


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
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except typer.TyperException as exc:
            print_error(exc.format_message())
            if (usage := getattr(exc, "ctx", None)) is not None:
                words = usage.command_path.split()[1:]  # the program may be `python -m …`
                err_console.print(f"see `{' '.join(['kvledger', *words])} -h`", highlight=False)
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
        return super().parse_args(ctx, self.expand(args))

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
        own = self._own_options()
        engine_flags = (SGLANG_SPELLINGS | VLLM_SPELLINGS) if self.takes_deployment else set()
        known = set(own) | engine_flags
        # vLLM's parser (kvledger.vllm.flags) skips flags its table does not list; leave
        # them to it when vLLM plans.
        vllm = self.takes_deployment and _names_vllm(args)
        out: list[str] = []
        takes_value = False
        for i, word in enumerate(args):
            if word == "--":  # a pasted launch command follows: kvledger.sglang.launch reads it
                return out + args[i:]
            if takes_value or not word.startswith("--") or word == "--":
                out.append(word)
                takes_value = False
                continue
            name, eq, value = word.partition("=")
            try:
                name = read_flag(name, known)
            except UnknownFlag as exc:
                if not vllm:
                    raise FlagSpellingError(str(exc)) from None
            except ValueError as exc:
                raise FlagSpellingError(str(exc)) from None
            out.append(name + eq + value)
            takes_value = own.get(name, False) and not eq
        return out


def _names_vllm(args: list[str]) -> bool:
    """Whether --engine or --rules (as given, before `--`) selects vLLM."""
    words = args[:args.index("--")] if "--" in args else args
    for i, word in enumerate(words):
        name, eq, value = word.partition("=")
        if name in ("--engine", "--rules"):
            value = value if eq else (words[i + 1] if i + 1 < len(words) else "")
            if "vllm" in value:
                return True
    return False


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


def command(*, help: str, epilog: str | None = None,  # noqa: A002 (typer's name)
            deployment: bool = True) -> Callable:
    """Register a command; with `deployment` it also accepts SGLang deployment flags."""
    if deployment:
        return app.command(cls=DeploymentCommand, context_settings=EXTRA_ARGS, help=help,
                           epilog=epilog)
    return app.command(cls=KvCommand, context_settings=HELP, help=help, epilog=epilog)
