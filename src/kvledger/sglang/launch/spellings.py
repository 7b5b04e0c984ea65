"""How a `--word` on the command line is read: argparse's rules, as SGLang's parser applies them.

SGLang parses its flags with `argparse.ArgumentParser(prog="sglang serve")`, whose default
`allow_abbrev=True` reads any unambiguous prefix of a flag as that flag, refuses an ambiguous
one and exits 2 on an unknown one. kvledger reads deployment flags the same way, against
every spelling SGLang's parser registers (`sglang_flags.txt`, from the 0.5.21 and 0.5.23
wheels) plus the older spellings kvledger's flag table still accepts (`--nsa-*`).

>>> read_flag("--speculative-algo", SGLANG_SPELLINGS)
'--speculative-algorithm'
>>> read_flag("--tp", SGLANG_SPELLINGS)
'--tp'
>>> read_flag("--tpp", SGLANG_SPELLINGS)
Traceback (most recent call last):
...
kvledger.sglang.launch.spellings.UnknownFlag: --tpp: unknown flag; did you mean --tp?
>>> read_flag("--max", SGLANG_SPELLINGS)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
kvledger.sglang.launch.spellings.AmbiguousFlag: --max: ambiguous flag, could be --max-...
"""

from __future__ import annotations

import difflib
from collections.abc import Collection
from importlib import resources

from kvledger.core.errors import DeploymentError
from kvledger.sglang.launch.flags import KNOWN


class UnknownFlag(DeploymentError):
    """No flag has this spelling or begins with it (argparse: unrecognized arguments)."""


class AmbiguousFlag(DeploymentError):
    """Several flags begin with this spelling (argparse: ambiguous option)."""


def _sglang_flags() -> frozenset[str]:
    text = resources.files("kvledger.sglang.launch").joinpath("sglang_flags.txt").read_text("utf-8")
    return frozenset(line.split()[0] for line in text.splitlines()
                     if line.strip() and not line.startswith("#"))


SGLANG_FLAGS: frozenset[str] = _sglang_flags()
# What the deployment parser accepts: SGLang's own spellings and the table's older aliases.
SGLANG_SPELLINGS: frozenset[str] = SGLANG_FLAGS | KNOWN


def suggestions(word: str, known: Collection[str]) -> list[str]:
    """Up to three known spellings close to `word`, best first."""
    long = sorted(flag for flag in known if flag.startswith("--"))  # not vLLM's -tp
    return difflib.get_close_matches(word, long, n=3, cutoff=0.7)


def read_flag(word: str, known: Collection[str]) -> str:
    """The flag `word` names under argparse's rules: itself when known, else the one known
    flag it abbreviates; UnknownFlag or AmbiguousFlag otherwise."""
    if word in known:
        return word
    longer = sorted(flag for flag in known if flag.startswith(word))
    if len(longer) == 1:
        return longer[0]
    if longer:
        shown = ", ".join(longer[:6]) + (f" (and {len(longer) - 6} more)" if len(longer) > 6 else "")
        raise AmbiguousFlag(f"{word}: ambiguous flag, could be {shown}")
    close = suggestions(word, known)
    hint = ""
    if close:
        hint = f"; did you mean {', '.join(close[:-1])} or {close[-1]}?" if len(close) > 1 \
            else f"; did you mean {close[0]}?"
    raise UnknownFlag(f"{word}: unknown flag{hint}")
