"""Run one CLI invocation in-process and hold it to the boundary contract.

The contract (issue 13): every input ends, within `TIME_BOUND_S`, with exit 0 or 2 — never a
traceback (an exception other than SystemExit reaching the runner), never a hang, and with
`--json` and exit 0, stdout is strict JSON (no NaN or Infinity, which Python's json would
otherwise write and read). Cases are counted per entry point (`COUNTS`), printed at the end
of the session by `conftest.py`.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter

from hypothesis import HealthCheck, settings
from typer.testing import CliRunner

from kvledger.cli import app

TIME_BOUND_S = 60.0  # per case, on a loaded 2-core machine; real cases take < 2 s
COUNTS: Counter[str] = Counter()  # cases per entry point
EXITS: Counter[tuple[str, int]] = Counter()  # (entry point, exit code): both must occur
EXAMPLES_SCALE = float(os.environ.get("KVLEDGER_FUZZ_SCALE", "1"))  # >1 for a longer soak

runner = CliRunner()


def fuzz_settings(examples: int) -> settings:
    """Seeded (derandomized: the same cases every run), bounded, no deadline per case."""
    return settings(max_examples=max(1, int(examples * EXAMPLES_SCALE)), derandomize=True,
                    deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])


def _strict_constant(name: str) -> None:
    raise AssertionError(f"--json printed {name}, which is not JSON")


def check_invocation(entry: str, args: list[str], exits: tuple[int, ...] = (0, 2)) -> int:
    """Invoke `kvledger *args`; assert the contract; return the exit code. `exits` widens it
    for a command whose exit 1 is an answer (check-log: a logged number differs)."""
    COUNTS[entry] += 1
    start = time.monotonic()
    result = runner.invoke(app, args)
    elapsed = time.monotonic() - start
    assert elapsed < TIME_BOUND_S, f"kvledger {args!r} took {elapsed:.1f} s"
    exc = result.exception
    assert exc is None or isinstance(exc, SystemExit), (
        f"kvledger {args!r} raised {type(exc).__name__}: {exc}")
    assert result.exit_code in exits, (
        f"kvledger {args!r} exited {result.exit_code}: {result.output[-600:]}")
    if result.exit_code == 2:
        assert "Traceback" not in result.output, result.output[-600:]
    EXITS[entry, result.exit_code] += 1
    if "--json" in args and result.exit_code in exits and result.exit_code != 2:
        json.loads(result.stdout, parse_constant=_strict_constant)
    return result.exit_code
