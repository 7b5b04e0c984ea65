"""SGLang's own prefix tree replaying a trace sequentially, timed (CPU only).

    ENV/bin/python oracle/sglang/tree_replay.py --trace T.jsonl --out DIR \\
        (--cell S1.radix_p1:1:4670784 ... | --serve)

Each cell is a FULL-only replay at page ``PAGE`` over a KV pool of ``POOL_TOKENS``, run
through SGLang 0.5.23's `UnifiedRadixCache` with `tree_components=(FULL,)` and the Rust
TreeCore (`unified_cache/tree_core_registry.py`: the default backend, "rust"), over SGLang's
own allocator (`allocator/token.py:TokenToKVPoolAllocator` at page 1,
`allocator/paged.py:PagedTokenToKVPoolAllocator` above). Nothing is patched. Per request,
as `oracle/sglang-0.5.23-tree/README.md` replays it (prompt ``T``, ``L = len(T)``,
``A = ⌊L/P⌋·P``):

1. `match_prefix(MatchPrefixParams(key=RadixKey(T)))`; the hit is ``device_prefix_len``;
2. `lock(last_device_node)`;
3. allocate ``⌈L/P⌉·P − hit`` slots; if the allocator is short, one
   `evict(EvictParams(num_tokens=shortfall))` first (its frees reach the allocator through
   the cache's actions);
4. `insert(InsertParams(key=RadixKey(T[:A]), value=prefix ++ new, prev_prefix_len=hit))`,
   the prefix read off the locked path (`path_device_indices`); duplicated KV comes back
   as `FreeDeviceKV` actions the cache applies; the partial last page is freed at once;
5. `unlock`.

Timing counts the cache and allocator calls only: expanding the trace into tokens and
building each `RadixKey` run outside the clock (a generous reading of SGLang's cost).
``core_*`` counts less still: only the time inside the Rust TreeCore binding's own calls
(`rust_tree_core/adapter.py` holds it as ``_binding``; a clock wraps each call), leaving out
the Python cache around it and SGLang's torch allocator (whose every free concatenates the
whole free list: `TokenToKVPoolAllocator.free`). Tokens
follow the oracle README's expansion: token ``p`` is ``(H[p // 512]·512 + p % 512) % MOD + 1``.

Output: one JSON line per cell on stdout, ``{"cell", "page_tokens", "pool_tokens", "wall_s",
"cpu_s", "core_wall_s", "core_cpu_s", "hit_tokens", "prefix_len_sha1", "hits_npy",
"tree_core"}``, and ``DIR/<cell>.npy``, the int32 hit array in file order. With ``--serve``
the process answers ``{"ready": requests}`` once the trace is expanded, then replays each
``{"cell", "page_tokens", "pool_tokens"}`` line it reads on stdin (`bench/replay.py
--against-sglang` alternates these with kvledger's own runs, so both see the same load).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import sys
import time
import types
import warnings
from array import array
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

BLOCK = 512
MOD = 2_000_000_000


def prompts(trace: Path) -> list[np.ndarray]:
    """Every prompt's tokens (int64), file order, by the oracle's expansion rule."""
    out = []
    offsets = np.arange(BLOCK, dtype=np.int64)
    with trace.open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            row = json.loads(line)
            ids = np.asarray(row["hash_ids"], dtype=np.int64)
            tokens = ((ids[:, None] * BLOCK + offsets) % MOD + 1).reshape(-1)
            out.append(tokens[: row["input_length"]])
    return out


def _import_sglang():
    import sizing  # the torchvision stand-in SGLang's import closure needs

    sys.meta_path.insert(0, sizing._StubFinder())
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    import torch
    from sglang.srt.mem_cache.allocator.paged import PagedTokenToKVPoolAllocator
    from sglang.srt.mem_cache.allocator.token import TokenToKVPoolAllocator
    from sglang.srt.mem_cache.base_prefix_cache import (
        EvictParams,
        InsertParams,
        MatchPrefixParams,
    )
    from sglang.srt.mem_cache.cache_init_params import CacheInitParams
    from sglang.srt.mem_cache.radix_cache import RadixKey
    from sglang.srt.mem_cache.unified_cache.component_type import ComponentType
    from sglang.srt.mem_cache.unified_radix_cache import UnifiedRadixCache

    return types.SimpleNamespace(
        torch=torch, PagedTokenToKVPoolAllocator=PagedTokenToKVPoolAllocator,
        TokenToKVPoolAllocator=TokenToKVPoolAllocator, EvictParams=EvictParams,
        InsertParams=InsertParams, MatchPrefixParams=MatchPrefixParams,
        CacheInitParams=CacheInitParams, RadixKey=RadixKey, ComponentType=ComponentType,
        UnifiedRadixCache=UnifiedRadixCache)


class TimedBinding:
    """The Rust binding with a clock around every call: the seconds spent inside the Rust
    TreeCore itself (wall and process CPU), apart from the Python cache and allocator."""

    def __init__(self, binding) -> None:
        self._binding = binding
        self.wall_s = self.cpu_s = 0.0

    def __getattr__(self, name):
        method = getattr(self._binding, name)
        if not callable(method):
            return method
        clock, cpu_clock = time.perf_counter, time.process_time

        def timed(*args, **kwargs):
            t, c = clock(), cpu_clock()
            try:
                return method(*args, **kwargs)
            finally:
                self.wall_s += clock() - t
                self.cpu_s += cpu_clock() - c

        return timed


def build(sg: types.SimpleNamespace, page: int, pool_tokens: int):
    torch = sg.torch
    if page == 1:
        allocator = sg.TokenToKVPoolAllocator(pool_tokens, torch.float16, "cpu", None, False)
    else:
        allocator = sg.PagedTokenToKVPoolAllocator(
            pool_tokens, page, torch.float16, "cpu", None, False)
    params = sg.CacheInitParams(
        disable=False, req_to_token_pool=None, token_to_kv_pool_allocator=allocator,
        page_size=page, tree_components=(sg.ComponentType.FULL,))
    cache = sg.UnifiedRadixCache(params)
    cache.tree_core._binding = TimedBinding(cache.tree_core._binding)
    return cache, allocator


def replay_cell(sg: types.SimpleNamespace, tokens: list[array], page: int, pool_tokens: int):
    """(hits int32, timings, tree core class name) of one replay; timings: wall and CPU
    seconds of the whole loop (cache and allocator calls) and inside the Rust core alone."""
    torch = sg.torch
    RadixKey, MatchPrefixParams = sg.RadixKey, sg.MatchPrefixParams
    InsertParams, EvictParams = sg.InsertParams, sg.EvictParams
    cache, allocator = build(sg, page, pool_tokens)
    hits = np.zeros(len(tokens), dtype=np.int32)
    clock, cpu_clock = time.perf_counter, time.process_time
    wall = cpu = 0.0
    for i, prompt in enumerate(tokens):
        length = len(prompt)
        aligned = length // page * page
        key, aligned_key = RadixKey(prompt), RadixKey(prompt[:aligned])
        t, c = clock(), cpu_clock()
        match = cache.match_prefix(MatchPrefixParams(key=key))
        hit = match.device_prefix_len
        lock = cache.lock(match.last_device_node)
        need = -(-length // page) * page - hit
        short = need - allocator.available_size()
        if short > 0:
            cache.evict(EvictParams(num_tokens=short))
        prefix = cache.path_device_indices(match.last_device_node)[:hit]
        fresh = allocator.alloc(need)
        if fresh is None:
            raise SystemExit(f"request {i}: {need} slots do not fit a pool of {pool_tokens}")
        value = torch.cat((prefix, fresh)) if hit else fresh
        if aligned:
            cache.insert(InsertParams(key=aligned_key, value=value[:aligned],
                                      prev_prefix_len=hit))
        if length > aligned:
            allocator.free(value[aligned:])
        cache.unlock(lock)
        wall += clock() - t
        cpu += cpu_clock() - c
        hits[i] = hit
    binding = cache.tree_core._binding
    timings = {"wall_s": wall, "cpu_s": cpu, "core_wall_s": binding.wall_s,
               "core_cpu_s": binding.cpu_s}
    return hits, timings, type(cache.tree_core).__name__


def _result(name: str, page: int, pool: int, hits: np.ndarray, timings: dict, core: str,
            out: Path) -> dict:
    np.save(out / f"{name}.npy", hits)
    return {"cell": name, "page_tokens": page, "pool_tokens": pool,
            **{k: round(v, 4) for k, v in timings.items()},
            "hit_tokens": int(hits.astype(np.int64).sum()),
            "prefix_len_sha1": hashlib.sha1(hits.astype("<i4").tobytes()).hexdigest(),
            "hits_npy": str(out / f"{name}.npy"), "tree_core": core}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--cell", action="append", default=[],
                        help="NAME:PAGE:POOL_TOKENS (FULL only)")
    parser.add_argument("--serve", action="store_true",
                        help="read cells as JSON lines on stdin, answer each on stdout")
    args = parser.parse_args(argv)
    # Results own stdout; anything the engine prints goes to stderr.
    results = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sg = _import_sglang()
    tokens = [array("q", p.tobytes()) for p in prompts(args.trace)]
    args.out.mkdir(parents=True, exist_ok=True)
    cells = (tuple(c.rsplit(":", 2)) for c in args.cell)
    if args.serve:
        print(json.dumps({"ready": len(tokens)}), file=results, flush=True)
        cells = ((c["cell"], c["page_tokens"], c["pool_tokens"]) for c in map(json.loads, sys.stdin))
    for name, page, pool in cells:
        page, pool = int(page), int(pool)
        hits, timings, core = replay_cell(sg, tokens, page, pool)
        print(json.dumps(_result(name, page, pool, hits, timings, core, args.out)),
              file=results, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
