"""vLLM's own prefix cache replaying a trace sequentially, timed (CPU only).

    ENV/bin/python oracle/vllm/prefix_replay.py --trace T.jsonl --out DIR --serve

Each cell is one row of `oracle/vllm-0.33-prefix-cache/summary.json` (its README §1 and §3):
vLLM 0.33.0's `KVCacheManager` (`v1/core/kv_cache_manager.py`), which builds the
`UnitaryKVCacheCoordinator` for a FULL-only cell and the `HybridKVCacheCoordinator` for
FULL + Mamba "align" (`v1/core/kv_cache_coordinator.py`), over one `BlockPool`. Nothing is
patched. Per request (prompt of ``L`` tokens, block ``B``), in the scheduler's order:

0. `Request(T, block_hasher=get_request_block_hasher(B, sha256))` hashes every full block;
1. `new_step_starts()`; `get_computed_blocks(req)` (capped at ``L − 1``): the hit ``h`` and
   the shared-prefix boundary; ``n = L − h``, for a hybrid cut by
   `Scheduler._mamba_block_aligned_split` (vLLM's function, called on an object carrying
   the fields `Scheduler.__init__` derives); `allocate_slots(req, n, h, blocks,
   full_sequence_must_fit=True, has_scheduled_reqs=False)`; computed and in-flight += n;
2. further chunks: `new_step_starts()`, split, `allocate_slots(req, n')` (it removes the
   skipped blocks at ``computed − in_flight`` itself); with the async scheduler's batch
   queue of 2 the previous step's output is processed after the next is scheduled
   (in-flight −= its tokens), with the sync scheduler at once;
3. the last output: one token appended, `cache_blocks(req, computed − in_flight)`, `free`.

Timings: ``wall_s``/``cpu_s`` cover building the manager (its BlockPool), the cache calls
and the split; ``hash_wall_s``/
``hash_cpu_s`` the `Request` construction (block hashing), apart: token lists are built
outside both clocks. Token ``p`` is ``(H[p // 512]·512 + p % 512) % MOD + 1`` (the oracle's
expansion). Each answer is one JSON line, ``{"cell", "wall_s", "cpu_s", "hash_wall_s",
"hash_cpu_s", "prefix_len_sha1", "hits_npy"}``; the hit array is saved as ``DIR/<cell>.npy``.
``--serve`` answers ``{"ready": requests}``, then replays each summary.json row it reads on
stdin (`bench/vllm_replay.py` alternates these with kvledger's runs).
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
from collections import deque
from pathlib import Path

import numpy as np

BLOCK = 512
MOD = 2_000_000_000
MAX_MODEL_LEN = 1 << 22  # above every prompt of the Mooncake traces


def trace_rows(trace: Path) -> list[tuple[int, list[int]]]:
    with trace.open(encoding="utf-8") as handle:
        rows = (json.loads(line) for line in handle if line.strip())
        return [(r["input_length"], r["hash_ids"]) for r in rows]


def prompt_tokens(length: int, hash_ids: list[int]) -> list[int]:
    ids = np.asarray(hash_ids, dtype=np.int64)
    tokens = ((ids[:, None] * BLOCK + np.arange(BLOCK)) % MOD + 1).reshape(-1)
    return tokens[:length].tolist()


def _import_vllm() -> types.SimpleNamespace:
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    import torch
    from vllm.sampling_params import SamplingParams
    from vllm.utils.hashing import sha256
    from vllm.v1.attention.backends.registry import MambaAttentionBackendEnum
    from vllm.v1.core.kv_cache_manager import KVCacheManager
    from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash
    from vllm.v1.core.sched.scheduler import Scheduler
    from vllm.v1.kv_cache_interface import (
        FullAttentionSpec,
        KVCacheConfig,
        KVCacheGroupSpec,
        MambaSpec,
    )
    from vllm.v1.request import Request

    init_none_hash(sha256)
    return types.SimpleNamespace(
        torch=torch, SamplingParams=SamplingParams, sha256=sha256,
        MambaAttentionBackendEnum=MambaAttentionBackendEnum, KVCacheManager=KVCacheManager,
        get_request_block_hasher=get_request_block_hasher, Scheduler=Scheduler,
        FullAttentionSpec=FullAttentionSpec, KVCacheConfig=KVCacheConfig,
        KVCacheGroupSpec=KVCacheGroupSpec, MambaSpec=MambaSpec, Request=Request)


def build(v: types.SimpleNamespace, row: dict):
    """(manager, split shim or None) for one summary.json row (README §1)."""
    size, f32 = row["block_size"], v.torch.float32
    # 8·B bytes per page in every group, as the hybrid allocator requires.
    attention = v.FullAttentionSpec(block_size=size, num_kv_heads=1, head_size=1, dtype=f32)
    groups = [v.KVCacheGroupSpec(["attn"], attention)]
    hybrid = row["kind"] == "hybrid-align"
    if hybrid:
        mamba = v.MambaSpec(
            block_size=size, shapes=((2 * size,),), dtypes=(f32,),
            mamba_type=v.MambaAttentionBackendEnum.GDN_ATTN, mamba_cache_mode="align",
            num_prefill_checkpoint_blocks=row["num_prefill_checkpoint_blocks"],
            prefill_checkpoint_alignment=16)
        groups.insert(0, v.KVCacheGroupSpec(["linear"], mamba))  # layer 0 is linear
    config = v.KVCacheConfig(
        num_blocks=row["pool_tokens"] // size + 1, kv_cache_tensors=[], kv_cache_groups=groups,
        prefix_cache_retention_interval=row["prefix_cache_retention_interval"] if hybrid else 0,
        hash_block_size=size, cache_hit_alignment_tokens=size)
    manager = v.KVCacheManager(config, max_model_len=MAX_MODEL_LEN, scheduler_block_size=size,
                               hash_block_size=size, enable_caching=True)
    if not hybrid:
        return manager, None
    # The fields of Scheduler.__init__ that _mamba_block_aligned_split reads, as it derives
    # them for this config (no speculative decoding, no fine-grained hits, budget unbounded).
    shim = types.SimpleNamespace(
        cache_config=types.SimpleNamespace(block_size=size), block_size=size,
        hash_block_size=size, mamba_partial_cache_hit=False, use_eagle_block_drop=False,
        num_hash_lookahead_tokens=0,
        mamba_has_prefill_checkpoint_blocks=row["num_prefill_checkpoint_blocks"] > 0,
        mamba_prefill_checkpoint_alignment=16, max_num_scheduled_tokens=MAX_MODEL_LEN,
        scheduler_config=types.SimpleNamespace(long_prefill_token_threshold=0),
        mamba_shared_prefix_checkpoint=False)
    return manager, shim


def replay_cell(v: types.SimpleNamespace, rows: list, row: dict) -> tuple[np.ndarray, dict]:
    clock, cpu_clock = time.perf_counter, time.process_time
    t, c = clock(), cpu_clock()
    manager, shim = build(v, row)  # the BlockPool's blocks: part of a replay, as in ours
    wall, cpu = clock() - t, cpu_clock() - c
    split = v.Scheduler._mamba_block_aligned_split
    depth = 2 if row["async_scheduling"] else 1  # EngineCore's batch queue
    hasher = v.get_request_block_hasher(row["block_size"], v.sha256)
    params = v.SamplingParams(max_tokens=1)
    hits = np.zeros(len(rows), dtype=np.int32)
    hash_wall = hash_cpu = 0.0
    for i, (length, hash_ids) in enumerate(rows):
        tokens = prompt_tokens(length, hash_ids)
        t, c = clock(), cpu_clock()
        req = v.Request(str(i), tokens, params, None, block_hasher=hasher)
        t2, c2 = clock(), cpu_clock()
        manager.new_step_starts()
        blocks, h, boundary = manager.get_computed_blocks(req)
        req.shared_prefix_boundary = boundary
        n = length - h
        if shim is not None:
            n = split(shim, req, n, h, 0)
        if manager.allocate_slots(req, n, h, blocks, num_lookahead_tokens=0,
                                  full_sequence_must_fit=True, has_scheduled_reqs=False) is None:
            raise SystemExit(f"{row['run']}: request {i} does not fit")
        req.num_computed_tokens = h  # Scheduler.schedule, once the hit is allocated
        queue = deque()
        while True:
            req.num_computed_tokens += n  # Scheduler._update_after_schedule
            req.num_in_flight_tokens += n
            queue.append(n)
            while len(queue) >= depth:  # the oldest step's output is processed
                req.num_in_flight_tokens -= queue.popleft()
            if req.num_computed_tokens >= length:
                break
            manager.new_step_starts()
            n = split(shim, req, length - req.num_computed_tokens)
            if manager.allocate_slots(req, n, num_lookahead_tokens=0) is None:
                raise SystemExit(f"{row['run']}: request {i} chunk does not fit")
        while queue:
            req.num_in_flight_tokens -= queue.popleft()
        req.append_output_token_ids(1)
        manager.cache_blocks(req, req.num_computed_tokens - req.num_in_flight_tokens)
        manager.free(req)
        wall += clock() - t2
        cpu += cpu_clock() - c2
        hash_wall += t2 - t
        hash_cpu += c2 - c
        hits[i] = h
    return hits, {"wall_s": wall, "cpu_s": cpu, "hash_wall_s": hash_wall,
                  "hash_cpu_s": hash_cpu}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--serve", action="store_true", required=True)
    args = parser.parse_args(argv)
    results = os.fdopen(os.dup(1), "w")  # answers own stdout; engine prints go to stderr
    os.dup2(2, 1)
    v = _import_vllm()
    rows = trace_rows(args.trace)
    args.out.mkdir(parents=True, exist_ok=True)
    print(json.dumps({"ready": len(rows)}), file=results, flush=True)
    for line in sys.stdin:
        row = json.loads(line)
        hits, timings = replay_cell(v, rows, row)
        name = f"{row['scenario']}.{row['run'].replace('@', '_b')}"
        np.save(args.out / f"{name}.npy", hits)
        print(json.dumps({"cell": name, **{k: round(s, 4) for k, s in timings.items()},
                          "prefix_len_sha1": hashlib.sha1(hits.astype("<i4").tobytes()).hexdigest(),
                          "hits_npy": str(args.out / f"{name}.npy")}), file=results, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
