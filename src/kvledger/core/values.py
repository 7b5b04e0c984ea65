"""Value parsers for SGLang flags: text in, a Python value out, `ValueError` when malformed.

Parsers check syntax only; ranges and cross-flag rules live in `Deployment` validation, so a
value is judged the same way whether it came from a flag or from Python. A parser may put a
sentence in its ValueError; the caller prefixes it with the flag as the user typed it.

>>> human_int("128k"), human_int("128K"), human_int("25.6k"), human_int("131072")
(128000, 131072, 25600, 131072)
>>> choice({"bf16": 2, "bfloat16": 2})("fp8")
Traceback (most recent call last):
...
ValueError: expected one of bf16, bfloat16
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping

Parser = Callable[[str], object]

# sglang.srt.utils.common.human_readable_int (the type_parser of --context-length and
# --max-total-tokens): lower-case suffixes are decimal and may carry a fraction, upper-case
# suffixes are binary and must not.
_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def integer(text: str) -> int:
    if not re.fullmatch(r"[+-]?\d+", text):
        raise ValueError
    return int(text)


def human_int(text: str) -> int:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgGtT])", text.strip())
    if match is None:
        return integer(text.strip())
    number, suffix = match.groups()
    if suffix in _DECIMAL:
        return int(float(number) * _DECIMAL[suffix])
    if "." in number:
        raise ValueError(f"binary suffix {suffix} takes a whole number; did you mean "
                         f"{number}{suffix.lower()}?")
    return int(number) * _BINARY[suffix]


def number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError from None
    if not math.isfinite(value):
        raise ValueError
    return value


def choice(table: Mapping[str, object], *, refused: Mapping[str, str] | None = None,
           upper: bool = False) -> Parser:
    """Exact-match choices (argparse `choices=`); `refused` maps valid SGLang values that
    kvledger cannot size to the reason. `upper` folds case first, as SGLang does for
    --speculative-algorithm."""

    def parse(text: str) -> object:
        key = text.upper() if upper else text
        if key in table:
            return table[key]
        if refused and key in refused:
            raise ValueError(f"{refused[key]}; use one of {', '.join(table)}")
        raise ValueError(f"expected one of {', '.join(table)}")

    return parse


def enum_choices(enum: type, *, extra: Mapping[str, object] | None = None) -> dict[str, object]:
    """Every member by its value, plus extra spellings (aliases) of some members."""
    return {m.value: m for m in enum} | dict(extra or {})
