"""Reader for the Mooncake FAST'25 trace format (kvcache-ai/Mooncake, Apache-2.0).

One JSON object per line:

    {"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, ...]}

`timestamp` is the arrival in ms; `hash_ids` name the prompt's 512-token prefix pages, the last
one possibly partial, so `len(hash_ids) == ceil(input_length / 512)`. Equal ids mean equal
tokens. Each hash id becomes one segment of `kvledger.sim.workload`; its tokens, and so the
cache's page keys at any page size, follow deterministically from the id.

Blank lines are skipped; lines are replayed in timestamp order (ties keep file order).
Anything else wrong is a TraceError naming the line and the field: a timestamp that is not a
finite number in [0, 1e13] ms, lengths beyond 2**24 tokens (`kvledger.core.limits`), NaN or
Infinity (which Python's json reads), nesting deeper than 64, a line that is not UTF-8. A path
must be a regular file (a FIFO would block, `/dev/zero` never end) and a line at most
MAX_LINE_BYTES characters (`kvledger.core.inputs`).

>>> import io
>>> w = read_trace(io.StringIO('{"timestamp": 5, "input_length": 600, "output_length": 2, '
...                            '"hash_ids": [3, 4]}\\n'), name="t")
>>> r = w.requests[0]
>>> r.segment_ids, r.segment_tokens, r.prompt_tokens, r.arrival_ms
((3, 4), (512, 88), 600, 5.0)
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from kvledger.core.inputs import bounded_lines, check_regular
from kvledger.core.limits import (
    MAX_JSON_DEPTH,
    MAX_OUTPUT_TOKENS,
    MAX_PROMPT_TOKENS,
    MAX_TIMESTAMP_MS,
    check_allocation,
    json_depth_ok,
    show_value,
)
from kvledger.sim.workload import PROMPT_SEGMENT_LIMIT, Request, Workload

TRACE_PAGE_TOKENS = 512  # Mooncake hashes prompts in 512-token prefix pages
FIELDS = ("timestamp", "input_length", "output_length", "hash_ids")


class TraceError(ValueError):
    """A malformed trace line; the message names the line and the field."""


def _int_field(obj: dict[str, Any], name: str, where: str, minimum: int, maximum: int) -> int:
    value = obj[name]
    if isinstance(value, bool) or not isinstance(value, int):
        raise TraceError(f"{where}: field {name!r} must be an integer, got {show_value(value)}")
    if value < minimum:
        raise TraceError(f"{where}: field {name!r} must be ≥ {minimum}, got {value}")
    if value > maximum:
        raise TraceError(f"{where}: field {name!r} must be ≤ {maximum:,}, got "
                         f"{show_value(value)}")
    return value


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def _parse_line(text: str, where: str, rid: int) -> Request:
    if not json_depth_ok(text):
        raise TraceError(f"{where}: JSON nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        obj = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise TraceError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
    except ValueError as exc:  # NaN / Infinity, or an integer of over 4,300 digits
        raise TraceError(f"{where}: not valid JSON ({exc})") from None
    if not isinstance(obj, dict):
        raise TraceError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    for name in FIELDS:
        if name not in obj:
            raise TraceError(f"{where}: missing field {name!r}")
    stamp = obj["timestamp"]
    if (isinstance(stamp, bool) or not isinstance(stamp, int | float)
            or not (isinstance(stamp, int) or math.isfinite(stamp))
            or not 0 <= stamp <= MAX_TIMESTAMP_MS):
        raise TraceError(f"{where}: field 'timestamp' must be a non-negative number of ms "
                         f"(finite, at most {MAX_TIMESTAMP_MS:g}), got {show_value(stamp)}")
    prompt = _int_field(obj, "input_length", where, 1, MAX_PROMPT_TOKENS)
    output = _int_field(obj, "output_length", where, 0, MAX_OUTPUT_TOKENS)
    ids = obj["hash_ids"]
    if not isinstance(ids, list) or not all(
        isinstance(h, int) and not isinstance(h, bool) and 0 <= h < PROMPT_SEGMENT_LIMIT for h in ids
    ):
        raise TraceError(f"{where}: field 'hash_ids' must be a list of integers in "
                         f"0..{PROMPT_SEGMENT_LIMIT - 1}")
    pages = -(-prompt // TRACE_PAGE_TOKENS)
    if len(ids) != pages:
        raise TraceError(f"{where}: field 'hash_ids' has {len(ids)} ids but input_length "
                         f"{prompt} needs ceil({prompt}/{TRACE_PAGE_TOKENS}) = {pages}")
    last = prompt - (pages - 1) * TRACE_PAGE_TOKENS
    lengths = (TRACE_PAGE_TOKENS,) * (pages - 1) + (last,)
    return Request(rid=rid, arrival_ms=float(stamp), segment_ids=tuple(ids),
                   segment_tokens=lengths, output_tokens=output)


def parse_trace_lines(lines: Iterable[str], *, source: str) -> list[Request]:
    """Requests in file order; `source` prefixes every error ("trace.jsonl line 7: ...")."""
    requests: list[Request] = []
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        requests.append(_parse_line(text, f"{source} line {number}", len(requests)))
    return requests


def read_trace(stream: IO[str] | Path | str, *, name: str | None = None) -> Workload:
    """Read a whole trace from a path or an open text stream."""
    if isinstance(stream, str | Path):
        path = Path(stream)
        check_regular(str(path), path)
        # Requests in memory take a few times the line bytes (ids as Python ints): check first.
        check_allocation(f"trace {path.name}", 8 * path.stat().st_size, "cut the trace")
        try:
            with path.open(encoding="utf-8") as handle:
                return read_trace(handle, name=name or path.name)
        except UnicodeDecodeError as exc:
            raise TraceError(f"{path.name}: not UTF-8 text (byte {exc.start} of a line: "
                             f"{exc.reason})") from None
    label = name or "trace"
    requests = parse_trace_lines(bounded_lines(stream, label), source=label)
    if not requests:
        raise TraceError(f"{label}: no requests")
    ordered = sorted(requests, key=lambda r: r.arrival_ms)  # stable: ties keep file order
    return Workload(name=label, requests=tuple(ordered))
