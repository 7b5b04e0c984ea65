"""The standard streams at the program's edge: closed, unwritable, or unable to encode.

`run(entry)` runs the CLI for `kvledger` and `python -m kvledger` (in-process callers, such as
tests with typer's CliRunner, bring their own streams):
- standard output closed (`kvledger plan >&-`; Python sets `sys.stdout` to None): nothing the
  command printed could land, so it does not run: one error line, exit status 2;
- a write to standard output that fails (`> /dev/full`: ENOSPC; EIO, EFBIG): one error line
  naming the reason, exit status 2, and no second report when Python flushes at exit;
- a closed reader (`| head -1`, EPIPE): exit status 1 quietly, as rich itself does;
- an encoding that cannot carry kvledger's `×`, `−`, `—` (PYTHONIOENCODING=ascii or latin-1, a
  C locale): those characters are written as ASCII (`x`, `-`, `--`, ...), any other as `?`; rich
  draws its boxes in ASCII there by itself;
- standard error closed or failing: its messages are lost, never a traceback.
A closed standard input is `kvledger check-log -`'s to report (`cli.commands.checklog`).

>>> "3 × 4 − 1 — ok, 10⁻⁶ s, ⌊x⌋".encode("ascii", errors=ASCII_ERRORS)
b'3 x 4 - 1 -- ok, 10^-6 s, floor(x)'
"""

from __future__ import annotations

import codecs
import os
import sys
import unicodedata
from collections.abc import Callable
from typing import Any, TextIO

ASCII_ERRORS = "kvledger-ascii"
# kvledger's own non-ASCII characters, as a reader of ASCII expects them.
ASCII = {"×": "x", "−": "-", "—": "--", "–": "-", "…": "...", "≤": "<=", "≥": ">=", "≈": "~",
         "→": "->", "←": "<-", "↔": "<->", "↑": "^", "↓": "v", "·": ".", "±": "+/-", "÷": "/",
         "µ": "u", "≠": "!=", "‘": "'", "’": "'", "“": '"', "”": '"', "•": "*", "►": ">",
         "✓": "ok", "✗": "x", "Σ": "sum ", "α": "alpha", "β": "beta", "√": "sqrt", "§": "S",
         "⌊": "floor(", "⌋": ")", "⌈": "ceil(", "⌉": ")", "⊗": "(x)", "█": "#", "─": "-",
         "━": "=", "│": "|", "├": "|", "└": "`", "┘": "'", "ᵀ": "^T"}
SUPERSCRIPTS = dict(zip("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-", strict=True))  # 10⁻⁶ is 10^-6
WRITE_FAILED = 2  # exit status: the output could not be written (as for input that is bad)


def _ascii(char: str) -> str:
    if char in ASCII:
        return ASCII[char]
    folded = unicodedata.normalize("NFKD", char).encode("ascii", "ignore").decode("ascii")
    return folded or "?"


def _replace(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    out, raised = [], False
    for char in exc.object[exc.start:exc.end]:
        if char in SUPERSCRIPTS:
            out.append(SUPERSCRIPTS[char] if raised else "^" + SUPERSCRIPTS[char])
            raised = True
        else:
            out.append(_ascii(char))
            raised = False
    return "".join(out), exc.end


codecs.register_error(ASCII_ERRORS, _replace)


class OutputError(Exception):
    """A write to standard output failed (not an OSError: no command's input handler may
    take it for a bad file of its own)."""

    def __init__(self, reason: OSError) -> None:
        super().__init__(reason.strerror or str(reason))


class _Guarded:
    """A standard stream whose failed writes are named (stdout) or dropped (stderr)."""

    def __init__(self, stream: TextIO, *, quiet: bool) -> None:
        self._stream, self._quiet = stream, quiet

    def _do(self, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except BrokenPipeError:
            if self._quiet:
                return None
            raise  # rich and `run` end quietly on a closed reader
        except OSError as exc:
            if self._quiet:
                return None
            raise OutputError(exc) from exc

    def write(self, text: str) -> Any:
        return self._do(lambda: self._stream.write(text))

    def flush(self) -> None:
        self._do(self._stream.flush)

    def __getattr__(self, name: str) -> Any:  # isatty, encoding, fileno, buffer, ...
        return getattr(self._stream, name)


def _can_encode(stream: TextIO) -> bool:
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        "×−—…".encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def _prepare(stream: TextIO | None, *, quiet: bool) -> TextIO | None:
    if stream is None:
        return None
    if not _can_encode(stream) and hasattr(stream, "reconfigure"):
        stream.reconfigure(errors=ASCII_ERRORS)
    return _Guarded(stream, quiet=quiet)  # type: ignore[return-value]


def _say(message: str) -> None:
    if sys.stderr is not None:
        sys.stderr.write(f"error: {message}\n")
        sys.stderr.flush()


def _drop_stdout() -> None:
    """Point fd 1 at /dev/null so Python's flush at exit reports nothing a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno() if sys.__stdout__ else 1)
    except (OSError, ValueError):
        pass


def run(entry: Callable[[], object]) -> int:
    """Run the CLI's entry point; the exit status (module doc)."""
    sys.stderr = _prepare(sys.stderr, quiet=True)
    if sys.stdout is None:
        _say("standard output is closed, so nothing could be printed; redirect it instead "
             "(> FILE, or > /dev/null to keep only the exit status)")
        return WRITE_FAILED
    sys.stdout = _prepare(sys.stdout, quiet=False)
    try:
        try:
            entry()
            code: object = 0
        except SystemExit as exc:
            code = exc.code
        sys.stdout.flush()
    except BrokenPipeError:
        _drop_stdout()
        return 1
    except OutputError as exc:
        _drop_stdout()
        _say(f"cannot write the output: {exc}")
        return WRITE_FAILED
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    _say(str(code))
    return 1
