"""Device-pool benchmarks: the paged allocator on a serving trace, and copy_slot; prints JSON.

1. Allocator. A seeded serving trace allocates and frees 1,048,576 tokens in 64-token pages
   from an 8,192-page pool: prompts of 256-8,192 tokens prefilled in chunks of at most 2,048
   tokens per step (chunks continue a request's last page), outputs of 16-512 tokens decoded
   one token per step for the whole running batch, every request freed when done. The batch
   is capped at the article deployment's N (68 requests: GLM-5.3-Flash, 100 GiB, state
   slots bind), read from the plan. The same trace is replayed on `PagedTokenAllocator` (numpy, batched calls, misuse
   checks) and on a plain Python free list (a list of page ids, one loop iteration per
   request and a list of token slots per page, no checks). Times count only allocator
   calls; medians of --repeats runs. Both must hand out the same slots.
2. copy_slot. One full GLM-5.3-Flash state slot (34 KDA layers, 147,619,840 B at attn_tp 1,
   fp32 temporal) copied with `MambaPool.copy_slot` versus one contiguous torch copy of the
   same number of bytes, interleaved; target ≥ 0.8 of the contiguous copy's speed.

    python bench/pools.py [--repeats 5] [--copies 30] [--device cpu|cuda]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from kvledger.pools.build import CONV_DTYPE, STATE_DTYPES
from kvledger.pools.paged import PagedTokenAllocator
from kvledger.pools.state import MambaPool
from kvledger.sglang.deploy import Deployment, KVDtype
from kvledger.sglang.plan import make_plan

PAGE_TOKENS = 64
POOL_PAGES = 8_192
TRACE_TOKENS = 1 << 20
CHUNK_TOKENS = 2_048
KINDS = ("extend", "decode", "free")


@dataclass
class Trace:
    """Steps of ("extend", ids, prefix_lens, seq_lens) | ("decode", ids) | ("free", ids)."""

    steps: list[tuple] = field(default_factory=list)
    tokens: int = 0


def make_trace(seed: int, max_running: int) -> Trace:
    """A scheduler run on page counts only: admit while a request's whole length fits."""
    rng = np.random.default_rng(seed)
    trace, free_pages, next_id = Trace(), POOL_PAGES, 0
    waiting: list[tuple[int, int, int]] = []  # (id, prompt, output)
    prefilling: dict[int, list[int]] = {}  # id → [done, prompt, output]
    decoding: dict[int, list[int]] = {}  # id → [len, remaining output, pages reserved]
    reserved: dict[int, int] = {}
    while trace.tokens < TRACE_TOKENS or prefilling or decoding:
        while trace.tokens < TRACE_TOKENS and len(waiting) < 8:
            waiting.append((next_id, int(rng.integers(256, 8_193)), int(rng.integers(16, 513))))
            next_id += 1
        while waiting and len(prefilling) + len(decoding) < max_running:
            rid, prompt, output = waiting[0]
            need = -(-(prompt + output) // PAGE_TOKENS)
            if need > free_pages:
                break
            waiting.pop(0)
            free_pages -= need
            reserved[rid] = need
            prefilling[rid] = [0, prompt, output]
        budget, ids, prefix, seq = CHUNK_TOKENS, [], [], []
        for rid, (done, prompt, _) in list(prefilling.items()):
            take = min(prompt - done, budget)
            if take == 0:
                break
            ids.append(rid), prefix.append(done), seq.append(done + take)
            prefilling[rid][0] += take
            budget -= take
        if ids:
            trace.steps.append(("extend", ids, prefix, seq))
            trace.tokens += sum(seq) - sum(prefix)
        for rid in [r for r, (done, prompt, _) in prefilling.items() if done == prompt]:
            done, _, output = prefilling.pop(rid)
            decoding[rid] = [done, output]
        if decoding:
            ids = list(decoding)
            trace.steps.append(("decode", ids))
            trace.tokens += len(ids)
            finished = []
            for rid in ids:
                decoding[rid][0] += 1
                decoding[rid][1] -= 1
                if decoding[rid][1] == 0:
                    finished.append(rid)
            if finished:
                trace.steps.append(("free", finished))
                for rid in finished:
                    del decoding[rid]
                    free_pages += reserved.pop(rid)
    return trace


class PythonFreeList:
    """The baseline: a list of free page ids, per-request Python loops, no checks."""

    def __init__(self, num_pages: int, page_tokens: int) -> None:
        self.free = list(range(num_pages, 0, -1))
        self.p = page_tokens

    def alloc_extend(self, prefix_lens, seq_lens, last_locs):
        p, out = self.p, []
        need = sum(-(-(s - pre - min(s - pre, -pre % p)) // p) for pre, s in zip(prefix_lens, seq_lens, strict=True))
        if need > len(self.free):
            return None
        for pre, s, last in zip(prefix_lens, seq_lens, last_locs, strict=True):
            in_tail = min(s - pre, -pre % p)
            locs = list(range(last + 1, last + 1 + in_tail))
            rest = s - pre - in_tail
            while rest > 0:
                page = self.free.pop()
                n = min(rest, p)
                locs.extend(range(page * p, page * p + n))
                rest -= n
            out.append(locs)
        return out

    def alloc_decode(self, seq_lens, last_locs):
        p, out = self.p, []
        if sum((s - 1) % p == 0 for s in seq_lens) > len(self.free):
            return None
        for s, last in zip(seq_lens, last_locs, strict=True):
            out.append(self.free.pop() * p if (s - 1) % p == 0 else last + 1)
        return out

    def free_tokens(self, locs) -> None:
        self.free.extend(sorted({loc // self.p for loc in locs}))


def replay_numpy(trace: Trace) -> tuple[dict[str, float], dict[int, np.ndarray]]:
    a = PagedTokenAllocator(num_pages=POOL_PAGES, page_tokens=PAGE_TOKENS)
    locs: dict[int, list[np.ndarray]] = {}
    last: dict[int, int] = {}
    lens: dict[int, int] = {}
    seen: dict[int, np.ndarray] = {}
    clock = dict.fromkeys(KINDS, 0.0)
    for step in trace.steps:
        kind, ids = step[0], step[1]
        lasts = np.array([last.get(r, -1) for r in ids], dtype=np.int64)
        if kind == "extend":
            prefix, seq = np.asarray(step[2]), np.asarray(step[3])
            t = time.perf_counter()
            got = a.alloc_extend(prefix, seq, lasts)
            clock[kind] += time.perf_counter() - t
            assert got is not None
            for rid, part, n in zip(ids, np.split(got, np.cumsum(seq - prefix)[:-1]), seq.tolist(),
                                    strict=True):
                locs.setdefault(rid, []).append(part)
                last[rid] = int(part[-1])
                lens[rid] = n
        elif kind == "decode":
            seq = np.array([lens[r] + 1 for r in ids])
            t = time.perf_counter()
            got = a.alloc_decode(seq, lasts)
            clock[kind] += time.perf_counter() - t
            assert got is not None
            for rid, loc in zip(ids, got.tolist(), strict=True):
                locs[rid].append(np.array([loc]))
                last[rid] = loc
                lens[rid] += 1
        else:
            for rid in ids:
                mine = np.concatenate(locs.pop(rid))
                seen[rid] = mine
                t = time.perf_counter()
                a.free(mine)
                clock[kind] += time.perf_counter() - t
                del last[rid]
    a.check_integrity()
    assert a.num_free_pages == POOL_PAGES
    return clock, seen


def replay_python(trace: Trace) -> tuple[dict[str, float], dict[int, list[int]]]:
    a = PythonFreeList(POOL_PAGES, PAGE_TOKENS)
    locs: dict[int, list[int]] = {}
    seen: dict[int, list[int]] = {}
    clock = dict.fromkeys(KINDS, 0.0)
    for step in trace.steps:
        kind, ids = step[0], step[1]
        lasts = [locs[r][-1] if r in locs else -1 for r in ids]
        if kind == "extend":
            t = time.perf_counter()
            got = a.alloc_extend(step[2], step[3], lasts)
            clock[kind] += time.perf_counter() - t
            for rid, part in zip(ids, got, strict=True):
                locs.setdefault(rid, []).extend(part)
        elif kind == "decode":
            seq = [len(locs[r]) + 1 for r in ids]
            t = time.perf_counter()
            got = a.alloc_decode(seq, lasts)
            clock[kind] += time.perf_counter() - t
            for rid, loc in zip(ids, got, strict=True):
                locs[rid].append(loc)
        else:
            for rid in ids:
                seen[rid] = locs.pop(rid)
                t = time.perf_counter()
                a.free_tokens(seen[rid])
                clock[kind] += time.perf_counter() - t
    return clock, seen


def _median_ms(runs: list[dict[str, float]], kind: str) -> float:
    return round(statistics.median(r[kind] for r in runs) * 1e3, 2)


def bench_allocator(repeats: int) -> dict:
    max_running = make_plan(kv_cache_dtype="fp8_e4m3").capacity.max_running_requests
    trace = make_trace(seed=0, max_running=max_running)
    ours, base = [], []
    for _ in range(repeats):  # interleaved, so both see the same machine load
        t_ours, seen_ours = replay_numpy(trace)
        t_base, seen_base = replay_python(trace)
        assert all(seen_ours[r].tolist() == seen_base[r] for r in seen_base), "different slots"
        ours.append({**t_ours, "total": sum(t_ours.values())})
        base.append({**t_base, "total": sum(t_base.values())})
    calls = {k: [s for s in trace.steps if s[0] == k] for k in KINDS}
    total_ours = statistics.median(r["total"] for r in ours)
    total_base = statistics.median(r["total"] for r in base)
    return {
        "tokens": trace.tokens, "page_tokens": PAGE_TOKENS, "pool_pages": POOL_PAGES,
        "requests": len(seen_base), "max_running_requests": max_running,
        "calls": {k: len(v) for k, v in calls.items()},
        "mean_batch_requests": {k: round(statistics.mean(len(s[1]) for s in v), 1)
                                for k, v in calls.items() if k != "free"},
        "paged_allocator_ms": {k: _median_ms(ours, k) for k in (*KINDS, "total")},
        "python_free_list_ms": {k: _median_ms(base, k) for k in (*KINDS, "total")},
        "speedup_vs_python_free_list": round(total_base / total_ours, 2),
        "paged_allocator_tokens_per_s": round(trace.tokens / total_ours),
    }


def bench_copy_slot(copies: int, device: str) -> dict:
    lay = make_plan(deployment=Deployment(kv_cache_dtype=KVDtype.FP8_E4M3)).layout
    assert lay.state is not None and lay.deployment.mamba_ssm_dtype is not None
    pool = MambaPool(spec=lay.state, num_layers=lay.model.num_linear_layers, num_slots=3,
                     conv_dtype=CONV_DTYPE, temporal_dtype=STATE_DTYPES[lay.deployment.mamba_ssm_dtype],
                     device=device)
    slot_bytes = pool.allocated_bytes // pool.num_slots
    pool.temporal.normal_()
    pool.conv.normal_()
    src = torch.randint(0, 255, (slot_bytes,), dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def timed(fn) -> float:
        sync()
        t = time.perf_counter()
        fn()
        sync()
        return time.perf_counter() - t

    slot_t, flat_t = [], []
    for _ in range(3):  # warm up: touch every page of both destinations
        pool.copy_slot(1, 2)
        dst.copy_(src)
    for _ in range(copies):
        slot_t.append(timed(lambda: pool.copy_slot(1, 2)))
        flat_t.append(timed(lambda: dst.copy_(src)))
    assert torch.equal(pool.temporal[:, 2], pool.temporal[:, 1]), "copy_slot: temporal differs"
    assert torch.equal(pool.conv[:, 2], pool.conv[:, 1]), "copy_slot: conv differs"
    assert torch.equal(dst, src)
    med_slot, med_flat = statistics.median(slot_t), statistics.median(flat_t)
    best_slot, best_flat = min(slot_t), min(flat_t)
    return {
        "slot_bytes": slot_bytes, "device": device, "copies": copies,
        "copy_slot_ms": {"median": round(med_slot * 1e3, 3), "best": round(best_slot * 1e3, 3)},
        "contiguous_copy_ms": {"median": round(med_flat * 1e3, 3),
                               "best": round(best_flat * 1e3, 3)},
        "copy_slot_GBps_best": round(slot_bytes / best_slot / 1e9, 2),
        "contiguous_GBps_best": round(slot_bytes / best_flat / 1e9, 2),
        # Best-of-n measures what each copy can do; the median also carries the noise of
        # other processes sharing the memory bus, so the target is judged on the best.
        "ratio_of_contiguous": {"median": round(med_flat / med_slot, 3),
                                "best": round(best_flat / best_slot, 3)},
        "target_ratio": 0.8,
        "meets_target": best_flat / best_slot >= 0.8,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--copies", type=int, default=30)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    args = parser.parse_args()
    print(json.dumps({
        "allocator": bench_allocator(args.repeats),
        "copy_slot": bench_copy_slot(args.copies, args.device),
        "torch_threads": torch.get_num_threads(),
        "load_average_1min": round(os.getloadavg()[0], 2),  # other processes share the CPUs
    }, indent=2))


if __name__ == "__main__":
    main()
