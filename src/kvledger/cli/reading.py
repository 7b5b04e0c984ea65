"""How a command's words are read: flag spellings, abbreviations, human counts, bad values.

One policy for every command (`cli.app` applies it before typer parses):
- a word spelled as an option, or as a flag of either engine, is that flag; SGLang's and
  vLLM's spellings of one flag are both known (`VLLM_ALIASES`, `SGLANG_ALIASES`);
- an unambiguous prefix of an option or of an SGLang flag is that flag, as SGLang's argparse
  reads it (vLLM's parser reads none), but only when that flag is an option of the command or
  an SGLang flag kvledger reads or refuses: a prefix of an ignored flag alone (`simulate
  --engine`, which SGLang would read as --engine-info-bootstrap-port) is an error, so no flag
  is ever dropped unseen;
- an ambiguous or unknown word is an error with a did-you-mean, except under vLLM, whose
  parser lists the flags it skips;
- the value of a token-count option may be human (`--context 32k`, `cli.bounds`);
- a value that does not parse is `FLAG VALUE: expected …`, not the parser's own sentence.

>>> expand_words(["--cont", "32k"], {"--context": True, "--help": False}, deployment=False)
['--context', '32000']
>>> expand_words(["--engine", "vllm"], {"--help": False}, deployment=True)
Traceback (most recent call last):
...
kvledger.cli.reading.FlagSpellingError: --engine: unknown flag; it abbreviates only \
--engine-info-bootstrap-port, which kvledger reads as no input here (spell a flag out in full)
"""

from __future__ import annotations

from collections.abc import Sequence

import typer

from kvledger.cli.bounds import human_value
from kvledger.core.limits import show_value
from kvledger.sglang.launch.flags import PREFIX_TARGETS, VLLM_ALIASES
from kvledger.sglang.launch.spellings import (
    SGLANG_SPELLINGS,
    UnknownFlag,
    read_flag,
    suggestions,
)
from kvledger.vllm.flags import SGLANG_ALIASES, VLLM_SPELLINGS

ENGINE_SPELLINGS = SGLANG_SPELLINGS | VLLM_SPELLINGS | set(VLLM_ALIASES) | set(SGLANG_ALIASES)


class FlagSpellingError(typer.TyperException):
    """An option word that names no option, or more than one (exit status 2, as argparse)."""

    exit_code = 2


class BadValue(typer.TyperException):
    """An option value that does not parse (with the usage hint, as argparse) or is out of
    range (without: the message says what the option expects); exit status 2."""

    exit_code = 2

    def __init__(self, message: str, ctx: typer.Context | None = None) -> None:
        super().__init__(message)
        self.ctx = ctx


def expand_words(args: list[str], own: dict[str, bool], *, deployment: bool) -> list[str]:
    """The words with every flag spelled in full and human counts as digits. `own`: the
    command's long options → whether each takes a value; `deployment`: whether the command
    also takes engine flags."""
    known = set(own) | (ENGINE_SPELLINGS if deployment else set())
    # What an abbreviation is read against: argparse's view, SGLang's parser's flags (vLLM's
    # parser reads no abbreviation), and what it may name: no flag that is ignored.
    pool = set(own) | (SGLANG_SPELLINGS if deployment else set())
    targets = set(own) | (PREFIX_TARGETS if deployment else set())
    # vLLM's parser (kvledger.vllm.flags) skips flags its table does not list; leave them to
    # it when vLLM plans.
    vllm = deployment and names_vllm(args)
    out: list[str] = []
    pending: str | None = None  # the own option whose value comes next
    for i, word in enumerate(args):
        if word == "--":  # a pasted launch command follows: kvledger.sglang.launch reads it
            return out + args[i:]
        if pending is not None or not word.startswith("--"):
            out.append(human_value(pending, word) if pending else word)
            pending = None
            continue
        spelled, eq, value = word.partition("=")
        name = spelled
        try:
            if spelled not in known:
                name = read_flag(spelled, pool)
        except UnknownFlag:
            if not vllm:
                raise FlagSpellingError(_unknown(spelled, known)) from None
        except ValueError as exc:
            raise FlagSpellingError(str(exc)) from None
        if name != spelled and name not in targets:
            raise FlagSpellingError(f"{spelled}: unknown flag; it abbreviates only {name}, "
                                    "which kvledger reads as no input here (spell a flag out "
                                    "in full)")
        if name in own and eq:
            value = human_value(name, value)
        out.append(name + eq + value)
        pending = name if own.get(name, False) and not eq else None
    return out


def _unknown(word: str, known: set[str]) -> str:
    """An unknown word's error, suggesting the closest of every spelling known."""
    close = suggestions(word, known) or sorted(f for f in known if f.startswith(word))[:1]
    hint = (f"; did you mean {', '.join(close[:-1])} or {close[-1]}?" if len(close) > 1
            else f"; did you mean {close[0]}?" if close else "")
    return f"{word}: unknown flag{hint}"


def names_vllm(args: list[str]) -> bool:
    """Whether --engine or --rules (as given, before `--`) selects vLLM."""
    words = args[:args.index("--")] if "--" in args else args
    for i, word in enumerate(words):
        name, eq, value = word.partition("=")
        if name in ("--engine", "--rules"):
            value = value if eq else (words[i + 1] if i + 1 < len(words) else "")
            if "vllm" in value:
                return True
    return False


def bad_value(exc: typer.BadParameter, words: Sequence[str]) -> typer.TyperException:
    """A value typer could not convert, as `FLAG VALUE: expected …`; a missing option or a
    message without an option stays as typer put it."""
    param = exc.param
    if type(exc) is not typer.BadParameter or param is None:
        return exc
    flag = next((o for o in param.opts if o.startswith("--")), param.opts[0])
    message = exc.message.removeprefix("Value error, ")
    if "valid integer" in message:
        message = "expected an integer"
    elif "valid number" in message:
        message = "expected a number"
    elif " is not one of " in message:  # an Enum option: "'x' is not one of 'a', 'b'."
        message = "expected one of " + message.split(" is not one of ", 1)[1].rstrip(".")
    return BadValue(f"{flag} {_given(words, param.opts)}: {message}", exc.ctx)


def _given(words: Sequence[str], opts: Sequence[str]) -> str:
    """The last value given to an option (any of its spellings), as an error shows it."""
    for i in range(len(words) - 1, -1, -1):
        name, eq, value = words[i].partition("=")
        if name in opts:
            return show_value(value if eq else words[i + 1] if i + 1 < len(words) else "")
    return "''"
