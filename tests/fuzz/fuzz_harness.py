"""Run one CLI invocation in-process and hold it to the boundary contract.

The contract (issues 13 and 21): every input ends, within `TIME_BOUND_S`, with exit 0 or 2 —
never a traceback (an exception other than SystemExit reaching the runner), never a hang;
exit 2 prints exactly one `error:` line, of bounded length (a huge value is never echoed
whole); with exit 0, no number is `inf` or `nan` — with `--json` stdout is strict JSON (no NaN
or Infinity, which Python's json would otherwise write and read), and every flag it lists as
ignored was spelled out in full by the case (an abbreviation never names an ignored flag).
Cases are counted per entry point (`COUNTS`), printed at the end of the session by
`conftest.py`.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import Counter

from hypothesis import HealthCheck, settings
from typer.testing import CliRunner

from kvledger.cli import app

TIME_BOUND_S = 60.0  # per case, on a loaded 2-core machine; real cases take < 2 s
MAX_ERROR_CHARS = 2_000  # an error line (names and lists of choices; never a 100 KB value)
NON_FINITE = re.compile(r"(?<![\w.-])-?(?:inf|nan|infinity)(?![\w-])", re.IGNORECASE)
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
        errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1, f"kvledger {args!r}: {result.stderr[-600:]}"
        assert len(errors[0]) <= MAX_ERROR_CHARS, f"kvledger {args!r}: {errors[0][:300]}…"
    EXITS[entry, result.exit_code] += 1
    if result.exit_code in exits and result.exit_code != 2:
        if "--json" in args:
            doc = json.loads(result.stdout, parse_constant=_strict_constant)
            spelled = {a.partition("=")[0] for a in args}
            ignored = doc.get("ignored_flags", []) if isinstance(doc, dict) else []
            assert set(ignored) <= spelled, f"kvledger {args!r} ignored {ignored}"
        else:
            found = NON_FINITE.search(result.stdout)
            assert found is None, f"kvledger {args!r} printed {found.group()!r}"
    return result.exit_code
