"""Run the grid through vLLM's planning, one process per GPU, and record the answers.

    python oracle/vllm/run_grid.py --env ENV --out answers.jsonl [--sample N] [--timeout S]
                                   [--check tests/data/oracle/vllm-0.33.0-grid.jsonl] [--blocks | --scale-out]

Deployments are grouped by GPU (the pretended platform is process-wide) and fed, one after
another, to `ENV/bin/python oracle/vllm/sizing.py --gpu G`, niced. An answer already in
--out (same id, same vLLM release) is kept, so a run stopped by --timeout resumes where it
stopped. Each output line is the deployment with vLLM's answer under "vllm_plan". With
--check, the run fails unless every answer equals the recording's (the tests compare kvledger
with that recording). With --blocks the rows are grid.block_size_deployments (a --block-size
each), recorded as tests/data/oracle/vllm-<release>-block-size.jsonl; with --scale-out,
grid.scale_out_deployments (pipeline stages, decode and prefill context parallelism), recorded
as tests/data/oracle/vllm-<release>-scale-out.jsonl.
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

ERROR_CHARS = 240


def clip(answer: dict) -> dict:
    """The answer as recorded: vLLM's refusal message clipped (its reason leads it)."""
    if answer.get("error"):
        answer["error"] = answer["error"][:ERROR_CHARS]
    return answer


def _known(out: Path) -> dict[str, dict]:
    if not out.exists():
        return {}
    rows = (json.loads(line) for line in out.read_text().splitlines() if line.strip())
    return {row["id"]: row for row in rows if "oracle_error" not in row["vllm_plan"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", required=True, help="the environment setup_env.sh built")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--sample", type=int)
    parser.add_argument("--timeout", type=float, default=3600, help="seconds for the whole run")
    parser.add_argument("--check", type=Path, help="a recording the answers must equal")
    parser.add_argument("--blocks", action="store_true",
                        help="the --block-size grid (grid.block_size_deployments)")
    parser.add_argument("--scale-out", action="store_true",
                        help="the pipeline / context-parallel grid (grid.scale_out_deployments)")
    args = parser.parse_args(argv)
    rows = grid.selected(args)
    if args.sample:
        rows = grid.sample(rows, args.sample)
    known = _known(args.out)
    todo = [row for row in rows if row["id"] not in known]
    start = time.monotonic()
    python = str(Path(args.env) / "bin" / "python")
    for gpu, group in groupby(sorted(todo, key=lambda r: r["gpu"]), key=lambda r: r["gpu"]):
        batch = list(group)
        left = args.timeout - (time.monotonic() - start)
        if left <= 0:
            break
        feed = "".join(json.dumps(row) + "\n" for row in batch)
        try:
            done = subprocess.run(["nice", python, str(HERE / "sizing.py"), "--gpu", gpu],
                                  input=feed, capture_output=True, text=True, timeout=left)
            lines = done.stdout
        except subprocess.TimeoutExpired as exc:
            lines = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
        by_id = {row["id"]: row for row in batch}
        for line in lines.splitlines():
            if line.startswith("{"):
                answer = clip(json.loads(line))
                known[answer["id"]] = {**by_id[answer["id"]], "vllm_plan": answer}
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
