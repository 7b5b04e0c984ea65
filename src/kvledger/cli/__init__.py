"""Command-line edge: `kvledger plan | explain | models | …`. Thin: parse, call, render.

Rooms, bottom up (a room imports only the ones above it in this list):
- `streams.py`: the standard streams at the edge (closed, full, unable to encode).
- `bounds.py`, `reading.py`: the range of every numeric option, and how words are read
  (spellings, abbreviations, values that do not parse).
- `app.py`: the typer app and the conventions every command shares (flag spelling, one
  `error: …` line, the JSON envelope, exit codes); beside it `reading.py` (how words are
  read: spellings, abbreviations, human counts), `bounds.py` (the range of every numeric
  option) and `streams.py` (closed, full or narrow standard streams).
- `options/`: option schemas, dataclasses of typer options (`plan.py`: the deployment and
  engine inputs; `terms.py`: vLLM's memory terms; `sim.py`: workload and simulation;
  `groups.py`: folds a dataclass of options into one parameter).
- `runners/`: use cases run from those inputs (`simulation.py`, the `simulate` what-ifs
  `sim_compare.py`, `sim_lossy.py`, `sim_slot_economy.py`, `verify_lossy.py`,
  `engines.py`, one plan per engine asked for, and `compare_sides.py`, the two sides of
  `compare`).
- `commands/`: the commands themselves, one module per command family.
"""

from kvledger.cli.app import app
from kvledger.cli.commands import (  # noqa: F401  (registers commands)
    checklog,
    plan,
    pools,
    replay,
    report,
    sim,
    sweep,
    verify,
)


def main() -> None:
    import sys

    from kvledger.cli.streams import run

    sys.exit(run(app))
