"""kvledger's vLLM plan beside vLLM's own, number by number (tests/oracle uses this).

    python oracle/vllm/agreement.py answers.jsonl [--rules vllm-0.33]

For each answered deployment kvledger plans the same flags with `--kv-cache-memory-bytes` set
to the bytes vLLM was given, and `compare` lists every quantity that differs:
- `starts`: both plan, or both refuse (and then for the same reason: one max_model_len request
  does not fit, max_num_seqs above the blocks, or no attention backend for the GPU);
- `block_size`, `groups` (kind and layer count per group, in vLLM's counting: a sparse-MLA
  group counts its indexer caches as layers, GLM-5.3-Flash's tail group is its own),
  `bytes_per_block`, `num_blocks`, `blocks_per_request`, `max_concurrency` (to the %.2f vLLM
  logs), `logged_tokens` and `max_num_seqs`;
- with pipeline stages, `stages`: per stage its layers, its groups' layer counts, its bytes per
  block and the blocks its own memory holds; the groups and bytes per block above are the
  scheduler's (stage 0's worker, as vLLM plans with it).
Runs in the project's environment (kvledger, no vLLM).
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
from kvledger.vllm.deploy import VllmDeployment  # noqa: E402
from kvledger.vllm.plan import make_vllm_plan  # noqa: E402

# refusal reasons, from the words of vLLM's and kvledger's messages
REASONS = (("one request does not fit", ("to serve at least one request",)),
           ("max_num_seqs above the blocks", ("max_num_seqs",)),
           ("hybrid groups under DCP", ("do not support context parallelism",)),
           ("no attention backend", ("no valid attention backend", "attention backend",
                                     "attention impls", "softmax lse")),
           ("context-parallel sizes", ("dcp_size", "decode context parallel",
                                       "decode-context-parallel-size", "when pcp is enabled")))


def reason(message: str) -> str:
    low = message.lower()
    return next((name for name, words in REASONS if any(w in low for w in words)), "other")


def kvledger_side(row: dict, rules: str) -> dict:
    """kvledger's numbers for the row's deployment, in the oracle's keys."""
    dep = VllmDeployment(tensor_parallel_size=row["tensor_parallel_size"],
                         pipeline_parallel_size=row.get("pipeline_parallel_size") or 1,
                         decode_context_parallel_size=row.get("decode_context_parallel_size") or 1,
                         prefill_context_parallel_size=row.get("prefill_context_parallel_size")
                         or 1,
                         kv_cache_dtype=row["kv_cache_dtype"],
                         enable_prefix_caching=row["enable_prefix_caching"],
                         num_speculative_tokens=row["num_speculative_tokens"],
                         block_size=row.get("block_size"),
                         kv_cache_memory_bytes=row["available_bytes"])
    try:
        plan = make_vllm_plan(row["model"], dep, rules=rules, gpu=row["gpu"])
    except (DeploymentError, ValueError) as exc:
        return {"starts": False, "error": str(exc)}
    lay, cap = plan.layout, plan.capacity
    first = plan.pipeline.stages[0] if plan.pipeline else None
    scheduler = first.layout if first else lay  # vLLM's scheduler plans with worker 0's config
    out = {"starts": True, "block_size": lay.block_tokens, "groups": _groups(scheduler),
           "bytes_per_block": scheduler.bytes_per_block, "num_blocks": cap.num_blocks,
           "blocks_per_request": cap.blocks_per_request,
           "max_concurrency": f"{cap.max_concurrency:.2f}", "logged_tokens": cap.logged_tokens,
           "max_num_seqs": cap.max_num_seqs}
    if plan.pipeline is not None:
        out["stages"] = [
            {"pp_rank": s.stage.pp_rank, "start_layer": s.stage.start_layer,
             "end_layer": s.stage.end_layer, "group_layers": sorted(n for _, n in _groups(
                 s.layout)), "bytes_per_block": s.capacity.bytes_per_block,
             "num_blocks_alone": s.capacity.own_num_blocks} for s in plan.pipeline.stages]
    return out


def _groups(lay) -> list[tuple[str, int]]:
    """(kind, layers) per group in vLLM's counting (indexer caches and the tail as layers)."""
    groups = [(g.kind, g.num_layers + (_indexers(lay, g) if g.kind == "attention" else 0))
              for g in lay.groups]
    if lay.kpool_tail:
        groups.append(("attention", lay.num_indexer_layers))
    return sorted(groups)


def _indexers(lay, group) -> int:
    return lay.num_indexer_layers if lay.indexer is not None else 0


def vllm_side(answer: dict) -> dict:
    if "block_size" not in answer or (not answer["starts"] and "num_blocks" not in answer):
        return {"starts": False, "error": answer.get("error", "")}
    if not answer["starts"]:
        return {"starts": False, "error": answer["error"]}
    out = {"starts": True, "block_size": answer["block_size"],
           "groups": sorted((g["kind"], g["num_layers"]) for g in answer["groups"]),
           "bytes_per_block": answer["bytes_per_block"], "num_blocks": answer["num_blocks"],
           "blocks_per_request": answer["blocks_per_request"],
           "max_concurrency": f"{answer['max_concurrency']:.2f}",
           "logged_tokens": answer["logged_tokens"], "max_num_seqs": answer["max_num_seqs"]}
    if "stages" in answer:
        out["stages"] = [{**s, "group_layers": sorted(s["group_layers"])}
                         for s in answer["stages"]]
    return out


def compare(row: dict, rules: str = "vllm-0.33") -> dict[str, tuple]:
    """{quantity: (kvledger, vLLM)} for every quantity that differs."""
    ours, theirs = kvledger_side(row, rules), vllm_side(row["vllm_plan"])
    if ours["starts"] != theirs["starts"]:
        return {"starts": (ours.get("error", True), theirs.get("error", True))}
    if not ours["starts"]:
        mine, engine = reason(ours["error"]), reason(theirs["error"])
        return {} if mine == engine else {"refusal": (ours["error"], theirs["error"])}
    return {key: (ours[key], theirs[key]) for key in theirs if ours[key] != theirs[key]}


# Models a release has no model class for: vLLM falls back to its Transformers backend, which
# plans another model (GLM-5.3-Flash in 0.24: GQA attention, so it refuses DCP for its KV
# heads); their rows are vLLM's word on that fallback, not on the model.
NO_MODEL_CLASS = {"vllm-0.24": frozenset({"glm-5.3-flash"})}


def comparable(row: dict, rules: str = "vllm-0.33") -> bool:
    """Rows vLLM answered (an `oracle_error` is the harness failing, not vLLM refusing) for a
    model the release has a class for."""
    return ("oracle_error" not in row["vllm_plan"]
            and row["model"] not in NO_MODEL_CLASS.get(rules, frozenset()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("answers", type=Path)
    parser.add_argument("--rules", default="vllm-0.33")
    parser.add_argument("--show", type=int, default=40, help="misses to print")
    args = parser.parse_args(argv)
    rows = [json.loads(line) for line in args.answers.read_text().splitlines() if line.strip()]
    usable = [row for row in rows if comparable(row, args.rules)]
    misses = {row["id"]: diff for row in usable if (diff := compare(row, args.rules))}
    kinds = Counter(key for diff in misses.values() for key in diff)
    unanswered = sum("oracle_error" in row["vllm_plan"] for row in rows)
    no_class = len(rows) - len(usable) - unanswered
    print(f"{len(usable) - len(misses)} of {len(usable)} agree under {args.rules} "
          f"({unanswered} not answered" + (f", {no_class} of a model the release has no class "
                                           "for" if no_class else "")
          + f"); differing: {dict(kinds)}")
    for ident, diff in list(misses.items())[: args.show]:
        print(ident, {k: v if k not in ("starts", "refusal") else tuple(str(x)[:90] for x in v)
                      for k, v in diff.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
