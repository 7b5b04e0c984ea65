"""Pasted command lines to argument lists, split as a POSIX shell splits them.

Both engines' launch parsers take either a list of arguments or one pasted string (with
quotes, `\\` line continuations and `#` comments).

>>> split_words("vllm serve m --max-model-len 8192  # long context")
['vllm', 'serve', 'm', '--max-model-len', '8192']
>>> split_words(["--tp", "8"])
['--tp', '8']
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from kvledger.core.errors import DeploymentError


def split_words(argv: Sequence[str] | str) -> list[str]:
    """A list of arguments as given, or one pasted string split like a POSIX shell."""
    if isinstance(argv, str):
        text = argv
    elif len(argv) == 1 and any(c.isspace() for c in argv[0]):
        text = argv[0]
    else:
        return list(argv)
    text = text.replace("\r\n", "\n").replace("\\\n", " ")
    try:
        return shlex.split(text, comments=True)
    except ValueError as exc:
        raise DeploymentError(f"cannot split the pasted command: {exc}") from None
