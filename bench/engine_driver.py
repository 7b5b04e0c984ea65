"""An engine's own cache, replaying the same cells in a subprocess of its oracle environment.

The replay benches (`bench/replay.py --against-sglang`, `bench/vllm_replay.py`) time
kvledger and the engine in the same run: the engine's driver (`oracle/<engine>/*_replay.py`,
run with the environment's python) expands the trace once, says ``{"ready": N}``, then
replays each cell it is sent and answers one JSON line with its timings and the path of its
hit array. Cells alternate between the two sides, so both see the same machine load.

Environments live in ``$KVLEDGER_ORACLE_HOME`` (default ``~/.cache/kvledger-oracle``) as
``<engine>-<release>``, built by ``oracle/<engine>/setup_env.sh``. One that is missing, or
whose python cannot import the engine, is reported and skipped, never built here.

>>> find_env("nosuchengine-0.0", probe="import nosuchengine") is None
True
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def oracle_home() -> Path:
    return Path(os.environ.get("KVLEDGER_ORACLE_HOME",
                               os.path.expanduser("~/.cache/kvledger-oracle")))


def find_env(name: str, *, probe: str) -> Path | None:
    """The environment ``name`` under the oracle home if its python runs ``probe``."""
    python = oracle_home() / name / "bin" / "python"
    if not python.exists():
        return None
    done = subprocess.run([str(python), "-c", probe], capture_output=True, timeout=600,
                          check=False)
    return python if done.returncode == 0 else None


class EngineDriver:
    """One driver process: `replay(cell)` sends a cell and waits for its answer."""

    def __init__(self, python: Path, script: str, trace: Path, out: Path) -> None:
        self.proc = subprocess.Popen(
            [str(python), str(ROOT / script), "--trace", str(trace), "--out", str(out),
             "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)
        ready = self._answer()
        self.requests = ready["ready"]

    def _answer(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            code = self.proc.wait()
            raise RuntimeError(f"engine driver exited with status {code} (its stderr above)")
        return json.loads(line)

    def replay(self, cell: dict) -> dict:
        """The driver's answer for ``cell``, with its hit array loaded as ``hits``."""
        self.proc.stdin.write(json.dumps(cell) + "\n")
        self.proc.stdin.flush()
        answer = self._answer()
        answer["hits"] = np.load(answer["hits_npy"])
        return answer

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def medians(runs: list[dict], keys: tuple[str, ...]) -> dict[str, float]:
    """Per timing key, the median over repeats (rounded to ms)."""
    return {k: round(statistics.median(r[k] for r in runs), 3) for k in keys}


def ratio(ours: float, theirs: float) -> float | None:
    """How many times faster kvledger is (theirs / ours); None when ours took no time."""
    return round(theirs / ours, 2) if ours > 0 else None
