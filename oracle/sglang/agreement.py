"""kvledger's SGLang plan beside SGLang's own sizing, number by number (tests/oracle uses this).

    python oracle/sglang/agreement.py answers.jsonl

Each answered deployment is planned by kvledger under the release's rule set
(`sglang-0.5.21`, `sglang-0.5.23`) on the same GPU with the same weights per rank
(`--weights-gib`), so the free memory before and after load is what SGLang was given, and
mem_fraction_static is each side's automatic choice. `compare` lists every quantity that
differs: `starts` (both plan, or both refuse), `page_size`, `mem_fraction_static` (to 1e-9),
`cell_bytes` (SGLang's `_cell_size`: the target's KV and indexer rows plus the budgeted draft
layers), `slot_bytes` (`mamba_cache_per_req`), `K` (max_mamba_cache_size), `T`
(max_total_num_tokens) and `N` (max_running_requests per attention-DP worker); with
`--pp-size` every stage's layer range, cell bytes, K, T and N (`pp_stages`; the top-level
numbers are stage 0's, and SGLang's `mamba_cache_per_req` counts every stage's layers, so the
slot bytes show in the stages' K instead).
Runs in the project's environment (kvledger, no SGLang).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

from kvledger.core.errors import DeploymentError  # noqa: E402
from kvledger.core.units import GiB  # noqa: E402
from kvledger.sglang.deploy import (  # noqa: E402
    Deployment,
    DisaggMode,
    DraftModel,
    KVDtype,
    SpecAlgorithm,
)
from kvledger.sglang.plan import make_plan  # noqa: E402

KEYS = ("page_size", "mem_fraction_static", "cell_bytes", "slot_bytes", "K", "T", "N")


def deployment(row: dict) -> Deployment:
    spec = row["draft_tokens"]
    return Deployment(tp_size=row["tp"], dp_size=row["dp"],
                      enable_dp_attention=row["dp_attention"],
                      kv_cache_dtype=KVDtype(row["kv_cache_dtype"]),
                      disable_radix_cache=row["disable_radix_cache"],
                      disaggregation_mode=DisaggMode(row["disaggregation_mode"]),
                      pp_size=row["pp"], dcp_size=row["dcp"],
                      speculative_num_draft_tokens=spec,
                      speculative_algorithm=(SpecAlgorithm(row.get("speculative_algorithm",
                                                                   "EAGLE")) if spec else None),
                      speculative_eagle_topk=1 if spec else None,  # as sizing.server_args
                      speculative_draft_model=DraftModel(
                          "target" if row.get("draft_model_path", "model") == "model"
                          else "unset"))


def kvledger_side(row: dict) -> dict:
    """kvledger's numbers for the row's deployment, in the oracle's keys."""
    try:
        plan = make_plan(row["model"], deployment(row), rules=f"sglang-{row['release']}",
                         gpu=row["gpu"], weights_gib=row["weights_bytes"] / GiB)
    except (DeploymentError, ValueError) as exc:
        return {"starts": False, "error": str(exc)}
    cap = plan.capacity
    ours = {"starts": True, "page_size": plan.page_tokens,
            "mem_fraction_static": cap.memory.mem_fraction_static,
            "cell_bytes": cap.budget_token_bytes or cap.token_bytes, "slot_bytes": cap.slot_bytes,
            "K": cap.state_slots if cap.slot_bytes else None, "T": cap.max_total_tokens,
            "N": cap.max_running_requests}
    if plan.pipeline is not None:
        ours["pp_stages"] = [_stage(stage) for stage in plan.pipeline.stages]
        ours["slot_bytes"] = None  # per stage (SGLang's mamba_cache_per_req covers every layer)
    return ours


def _stage(stage) -> dict:
    cap = stage.capacity
    return {"layers": [stage.start_layer, stage.end_layer],
            "cell_bytes": cap.budget_token_bytes or cap.token_bytes,
            "K": cap.state_slots if cap.slot_bytes else None, "T": cap.max_total_tokens,
            "N": cap.max_running_requests}


def compare(row: dict) -> dict[str, tuple]:
    """{quantity: (kvledger, SGLang)} for every quantity that differs."""
    ours, theirs = kvledger_side(row), row["sglang_answer"]
    if ours["starts"] != theirs["starts"]:
        return {"starts": (ours.get("error", True), theirs.get("error", True))}
    if not ours["starts"]:
        return {}
    diff = {}
    if "pp_stages" in theirs:
        mine = ours.get("pp_stages")
        engine = [{k: st[k] for k in ("layers", "cell_bytes", "K", "T", "N")}
                  for st in theirs["pp_stages"]]
        if mine != engine:
            diff["pp_stages"] = (mine, engine)
        ours = {**ours, **(mine or [{}])[0]}
        ours["slot_bytes"] = theirs.get("slot_bytes")
    for key in KEYS:
        a, b = ours[key], theirs.get(key)
        same = (abs(a - b) < 1e-9 if key == "mem_fraction_static" and None not in (a, b)
                else a == b)
        if not same:
            diff[key] = (a, b)
    return diff


def comparable(row: dict) -> bool:
    """Rows SGLang answered (`oracle_error`: the harness failed, not SGLang)."""
    return "oracle_error" not in row["sglang_answer"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("answers", type=Path, nargs="+")
    parser.add_argument("--show", type=int, default=40, help="misses to print")
    args = parser.parse_args(argv)
    for path in args.answers:
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        usable = [row for row in rows if comparable(row)]
        misses = {row["id"]: diff for row in usable if (diff := compare(row))}
        kinds = Counter(key for diff in misses.values() for key in diff)
        print(f"{path.name}: {len(usable) - len(misses)} of {len(usable)} agree "
              f"({len(rows) - len(usable)} not answered); differing: {dict(kinds)}")
        for ident, diff in list(misses.items())[: args.show]:
            print(" ", ident, {k: tuple(str(x)[:100] for x in v) for k, v in diff.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
