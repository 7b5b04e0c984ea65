"""Print how many fuzz cases each entry point ran (pytest -s, or the terminal summary)."""

from __future__ import annotations

from fuzz.fuzz_harness import COUNTS, EXITS


def pytest_terminal_summary(terminalreporter):
    if COUNTS:
        total = sum(COUNTS.values())
        parts = ", ".join(f"{entry} {n} (exit 0: {EXITS[entry, 0]}, exit 2: {EXITS[entry, 2]})"
                          for entry, n in sorted(COUNTS.items()))
        terminalreporter.write_line(f"fuzz cases: {total} ({parts})")
