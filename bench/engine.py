"""Reference engine throughput on a shared-prefix workload, with the cache and cache-free.

Both runs use the same seeded tiny GLM-5.3-shaped model, the same prompts and the same engine
loop (chunked prefill, batched decode); only the request cache differs: HybridCache (radix
tree, device pools; no eviction at these sizes) against FreshCache (every request computes
its whole prompt). Tokens/s counts served tokens (prompt + generated) per wall-clock second;
the median of `--repeats` alternating runs, each on a fresh cache. The outputs of the two
runs are compared token for token and logit for logit.

    python bench/engine.py [--systems 2] [--questions 8] [--system-tokens 128]
                           [--question-tokens 24] [--new-tokens 8] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
import torch

from kvledger.engine.cached import prefix_cache
from kvledger.engine.config import TinyConfig
from kvledger.engine.fresh import FreshCache
from kvledger.engine.loop import Engine
from kvledger.engine.memory import PoolSizes
from kvledger.engine.model import TinyModel
from kvledger.engine.verify import same_output

CHUNK_TOKENS = 64
MAX_RUNNING = 4


def make_prompts(args: argparse.Namespace) -> list[list[int]]:
    rng = np.random.default_rng(0)
    systems = [rng.integers(0, 256, size=args.system_tokens).tolist() for _ in range(args.systems)]
    # Interleaved, so each system prompt's questions arrive spread over the run.
    return [s + rng.integers(0, 256, size=args.question_tokens).tolist()
            for _ in range(args.questions) for s in systems]


def run(model: TinyModel, cache, prompts: list[list[int]], new_tokens: int):
    engine = Engine(model, cache, chunk_tokens=CHUNK_TOKENS, max_running_requests=MAX_RUNNING)
    start = time.perf_counter()
    out = engine.generate(prompts, new_tokens)
    return out, engine.stats, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--systems", type=int, default=2)
    parser.add_argument("--questions", type=int, default=8, help="questions per system prompt")
    parser.add_argument("--system-tokens", type=int, default=128)
    parser.add_argument("--question-tokens", type=int, default=24)
    parser.add_argument("--new-tokens", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)  # hundreds of tiny ops per token: threads only synchronise
    cfg = TinyConfig()
    model = TinyModel(cfg)
    prompts = make_prompts(args)
    longest = args.system_tokens + args.question_tokens + args.new_tokens
    served = sum(len(p) for p in prompts) + len(prompts) * args.new_tokens
    pages = -(-longest // 16) * len(prompts) + 16  # room for every request: no eviction
    seconds: dict[str, list[float]] = {"cached": [], "fresh": []}
    for _ in range(args.repeats):
        cached = prefix_cache(cfg, PoolSizes(num_pages=pages, num_state_slots=4 * MAX_RUNNING + 64,
                                             max_running_requests=MAX_RUNNING,
                                             max_context_tokens=longest))
        c_out, c_stats, c_s = run(model, cached, prompts, args.new_tokens)
        fresh = FreshCache(cfg, max_running_requests=MAX_RUNNING, max_context_tokens=longest)
        f_out, f_stats, f_s = run(model, fresh, prompts, args.new_tokens)
        seconds["cached"].append(c_s)
        seconds["fresh"].append(f_s)
    cached_tps = served / statistics.median(seconds["cached"])
    fresh_tps = served / statistics.median(seconds["fresh"])
    print(json.dumps({
        "workload": {"system_prompts": args.systems, "questions_per_system": args.questions,
                     "system_tokens": args.system_tokens, "question_tokens": args.question_tokens,
                     "new_tokens": args.new_tokens, "requests": len(prompts),
                     "chunk_tokens": CHUNK_TOKENS, "max_running_requests": MAX_RUNNING},
        "repeats": args.repeats,
        "served_tokens": served,
        "computed_tokens": {"cached": c_stats.computed_tokens, "fresh": f_stats.computed_tokens},
        "hit_rate": round(c_stats.hit_rate, 4),
        "seconds_median": {k: round(statistics.median(v), 3) for k, v in seconds.items()},
        "tokens_per_s": {"cached": round(cached_tps, 1), "fresh": round(fresh_tps, 1)},
        "speedup": round(cached_tps / fresh_tps, 2),
        "outputs_match": all(same_output(a, b) for a, b in zip(c_out, f_out, strict=True)),
    }, indent=2))


if __name__ == "__main__":
    main()
