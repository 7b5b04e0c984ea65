"""Run a release's grid through SGLang's own sizing, one process per GPU, and record the answers.

    python oracle/sglang/run_grid.py --release 0.5.21 --env ENV --out answers.jsonl
                                     [--sample N] [--timeout S]
                                     [--check tests/data/oracle/sglang-0.5.21-grid.jsonl]

Deployments are grouped by GPU (the pretended platform is process-wide) and fed, one after
another, to `ENV/bin/python oracle/sglang/sizing.py --gpu G`, niced. An answer already in --out
(same id) is kept, so a run stopped by --timeout resumes where it stopped. Each output line is
the deployment with SGLang's answer under "sglang_answer". With --check, the run fails unless
every answer equals the recording's (the tests compare kvledger with that recording).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from itertools import groupby
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import grid  # noqa: E402


def _known(out: Path) -> dict[str, dict]:
    if not out.exists():
        return {}
    rows = (json.loads(line) for line in out.read_text().splitlines() if line.strip())
    return {row["id"]: row for row in rows}


def ask(python: str, gpu: str, rows: list[dict], timeout: float) -> list[dict]:
    """SGLang's answers for one GPU's deployments (those it gave before a timeout)."""
    feed = "".join(json.dumps(row) + "\n" for row in rows)
    try:
        done = subprocess.run(["nice", python, str(HERE / "sizing.py"), "--gpu", gpu],
                              input=feed, capture_output=True, text=True, timeout=timeout)
        lines = done.stdout
    except subprocess.TimeoutExpired as exc:
        lines = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
    return [json.loads(line) for line in lines.splitlines() if line.startswith("{")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--release", choices=grid.RELEASES, required=True)
    parser.add_argument("--env", required=True, help="the environment setup_env.sh built")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--sample", type=int, default=grid.SAMPLE)
    parser.add_argument("--timeout", type=float, default=3600, help="seconds for the whole run")
    parser.add_argument("--check", type=Path, help="a recording the answers must equal")
    args = parser.parse_args(argv)
    rows = grid.sample(grid.deployments(args.release), args.sample)
    known = _known(args.out)
    todo = [row for row in rows if row["id"] not in known]
    start = time.monotonic()
    python = str(Path(args.env) / "bin" / "python")
    for gpu, group in groupby(sorted(todo, key=lambda r: r["gpu"]), key=lambda r: r["gpu"]):
        batch = {row["id"]: row for row in group}
        left = args.timeout - (time.monotonic() - start)
        if left <= 0:
            break
        for answer in ask(python, gpu, list(batch.values()), left):
            known[answer["id"]] = {**batch[answer["id"]], "sglang_answer": answer}
        args.out.write_text("".join(json.dumps(known[row["id"]], sort_keys=True) + "\n"
                                    for row in rows if row["id"] in known))
    print(f"{sum(r['id'] in known for r in rows)} of {len(rows)} deployments answered in "
          f"{time.monotonic() - start:.0f} s", file=sys.stderr)
    if args.check:
        recorded = {row["id"]: row for row in map(json.loads, args.check.read_text().splitlines())}
        stale = [i for i, row in known.items() if recorded.get(i) != row]
        print(f"{len(stale)} answers differ from {args.check}: {stale[:5]}", file=sys.stderr)
        return 1 if stale or len(known) != len(recorded) else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
