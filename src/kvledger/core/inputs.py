"""Text inputs of bounded size: a regular file (never a FIFO or a device), bounded lines.

A trace or a boot log is read whole, so an input without an end (`/dev/zero`, a FIFO nobody
writes, `yes | kvledger check-log -`) would block forever or end in a MemoryError. Files are
therefore refused unless regular, before they are opened (opening a FIFO blocks); lines are
read at most `MAX_LINE_BYTES` characters at a time, and standard input at most a cap of bytes;
each refusal names the input and the limit (`kvledger.core.limits`).

>>> import io
>>> list(bounded_lines(io.StringIO("a\\nbb\\n"), "t.jsonl", max_chars=4))
['a\\n', 'bb\\n']
>>> list(bounded_lines(io.StringIO("a\\n" + "b" * 9), "t.jsonl", max_chars=4))
Traceback (most recent call last):
...
ValueError: t.jsonl line 2: longer than 4 characters
"""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from kvledger.core.limits import MAX_LINE_BYTES

_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISDIR, "a directory"))


def check_regular(where: str, path: Path) -> None:
    """A ValueError unless `path` is a regular file (or a link to one)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise ValueError(f"{where}: no such file") from None
    except OSError as exc:
        raise ValueError(f"{where}: cannot be read ({exc.strerror})") from None
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "not a file")
        raise ValueError(f"{where}: {kind}, not a regular file (an input must end; save it to "
                         "a file first)")


def bounded_lines(handle: IO[str], where: str, *, max_chars: int = MAX_LINE_BYTES
                  ) -> Iterator[str]:
    """The lines of `handle`, each at most `max_chars` long, or a ValueError naming the line."""
    number = 0
    while True:
        line = handle.readline(max_chars + 1)
        if not line:
            return
        number += 1
        if len(line) > max_chars:
            raise ValueError(f"{where} line {number}: longer than {max_chars:,} characters")
        yield line


def read_capped(stream: IO[bytes], where: str, max_bytes: int, hint: str) -> bytes:
    """All of `stream`, or a ValueError once it holds more than `max_bytes`."""
    data = stream.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ValueError(f"{where}: more than {max_bytes:,} bytes; {hint}")
    return data
