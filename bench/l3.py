"""Store-tier bandwidth: put/get of GLM-5.3-Flash object groups, ours against the raw client.

A group is one tree node as the store tier writes it (`kvledger.store.group`): its 64-token
pages (KV rows + index keys: 11 DSA layers × 64 × 528 B + 11 × 8,448 B = 464,640 B each,
the token ledger's 7,260 B × 64) and its state slot (34 KDA layers, 147,619,840 B: the state
ledger), sizes taken from `kvledger plan --kv-cache-dtype fp8_e4m3`. Each backend runs on a
real server started on loopback for the run.

    ours  `write_group` (objects, then a manifest with per-object XXH3-64s) and `read_prefix`
          (manifest lookup, batched reads, size + XXH3-64 checks of every object)
    raw   the backend's own client putting / getting the same objects' bytes, no manifest,
          no check: Redis pipelined SET / MGET; Mooncake put_batch / get_batch; files

Same bytes, same run, fresh keys per round (Mooncake does not rewrite an existing key),
rounds alternating ours and raw; each figure is the best of `--repeats` rounds. The ratio
ours / raw is the figure of merit (target ≥ 0.8).

    python bench/l3.py                      # JSON on stdout
    python bench/l3.py --backends redis --groups 4 --pages 16 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

from kvledger.sglang.deploy import Deployment, KVDtype
from kvledger.sglang.plan import make_plan
from kvledger.store.backend import BackendKind
from kvledger.store.group import group_write
from kvledger.store.keys import Namespace, page_keys
from kvledger.store.local_dir import LocalDirStore
from kvledger.store.servers import start_server
from kvledger.store.transfer import read_prefix, write_group

os.environ.setdefault("MC_LOG_LEVEL", "ERROR")
LEASE_MS = 1000  # Mooncake: a read must end inside the lease; deletes wait it out


def sizes() -> tuple[int, int, int]:
    p = make_plan(deployment=Deployment(kv_cache_dtype=KVDtype.FP8_E4M3))
    page = p.layout.page_tokens
    return page, page * p.ledgers.token.total_bytes, p.ledgers.state.total_bytes


def make_groups(n: int, pages: int, page_tokens: int, page_bytes: int, state_bytes: int):
    rng = np.random.default_rng(0)
    out = []
    for _ in range(n):
        tokens = rng.integers(0, 150_000, size=pages * page_tokens)
        payload = [memoryview(rng.integers(0, 256, page_bytes, dtype=np.uint8))
                   for _ in range(pages)]
        state = memoryview(rng.integers(0, 256, state_bytes, dtype=np.uint8))
        out.append((tokens, payload, state))
    return out


class Raw:
    """The backend's client used directly on the same objects."""

    def __init__(self, kind: BackendKind, backend) -> None:
        self.kind, self.backend = kind, backend

    def put(self, items) -> None:
        if self.kind is BackendKind.REDIS:
            pipe = self.backend.client.pipeline(transaction=False)
            for k, v in items:
                pipe.set(k, v)
            assert all(pipe.execute())
        elif self.kind is BackendKind.MOONCAKE:
            client, limit = self.backend.client, self.backend.local_buffer_bytes // 2
            batch, acc = [], 0
            for k, v in [*items, (None, None)]:
                if k is None or (batch and acc + len(v) > limit):
                    rc = client.put_batch([a for a, _ in batch], [b for _, b in batch])
                    assert rc == 0, f"Mooncake put_batch: {rc}"
                    batch, acc = [], 0
                if k is not None:
                    batch.append((k, v))
                    acc += len(v)
        else:
            for k, v in items:
                (self.backend.root / k).write_bytes(v)

    def get(self, keys, lens) -> int:
        if self.kind is BackendKind.REDIS:
            got = self.backend.client.mget(keys)
        elif self.kind is BackendKind.MOONCAKE:
            client, limit = self.backend.client, self.backend.local_buffer_bytes // 2
            got, batch, acc = [], [], 0
            for k, n in [*zip(keys, lens, strict=True), (None, 0)]:
                if k is None or (batch and acc + n > limit):
                    got += client.get_batch(batch)
                    batch, acc = [], 0
                if k is not None:
                    batch.append(k)
                    acc += n
        else:
            got = [(self.backend.root / k).read_bytes() for k in keys]
        assert [len(g) for g in got] == list(lens)
        return sum(lens)


def one_round(kind, backend, groups, page_tokens, raw_first: bool):
    salt = uuid.uuid4().hex
    ns = Namespace(model="GLM-5.3-Flash", layout="bench", salt=salt)
    writes = []
    for tokens, pages, state in groups:
        keys = page_keys(ns, tokens, page_tokens=page_tokens)
        writes.append((keys, group_write(ns, keys, first_page=0, pages=pages, state=state)))
    total = sum(g.payload_bytes for _, g in writes)
    raw = Raw(kind, backend)
    raw_items = [[(f"raw{salt[:8]}:{i}:{j}", v) for j, (_, v) in enumerate(g.objects)]
                 for i, (_, g) in enumerate(writes)]
    times: dict[str, float] = {}

    def timed(name, fn):
        t = time.perf_counter()
        fn()
        times[name] = time.perf_counter() - t

    def ours_put():
        for _, g in writes:
            assert write_group(backend, g)

    def ours_get():
        for keys, _ in writes:
            got = read_prefix(backend, ns, keys, start_page=0)
            assert got is not None and got.end_page == len(keys)

    def raw_put():
        for items in raw_items:
            raw.put(items)

    def raw_get():
        for items in raw_items:
            raw.get([k for k, _ in items], [len(v) for _, v in items])

    order = [("raw_put", raw_put), ("ours_put", ours_put), ("raw_get", raw_get),
             ("ours_get", ours_get)]
    if not raw_first:
        order = [order[1], order[0], order[3], order[2]]
    for name, fn in order:
        timed(name, fn)
    if kind is BackendKind.MOONCAKE:
        time.sleep(LEASE_MS / 1000 + 0.2)  # past the lease, so the objects can be removed
    names = [k for _, g in writes for k, _ in [*g.objects, g.manifest]]
    backend.delete(names + [k for items in raw_items for k, _ in items])
    return total, times


def bench(kind: BackendKind, groups, page_tokens: int, repeats: int) -> dict:
    group_bytes = sum(len(p) for p in groups[0][1]) + len(groups[0][2])
    if kind is BackendKind.LOCAL_DIR:
        ctx, backend = tempfile.TemporaryDirectory(), None
        backend = LocalDirStore(Path(ctx.name))
        server = None
    elif kind is BackendKind.REDIS:
        server = start_server(kind, maxmemory_bytes=4 * len(groups) * group_bytes)
        backend = server.backend(timeout_s=60.0)
    else:
        server = start_server(kind, lease_ms=LEASE_MS)
        backend = server.backend(segment_bytes=4 * len(groups) * group_bytes,
                                 local_buffer_bytes=1 << 30)
    try:
        best: dict[str, float] = {}
        for r in range(repeats):
            total, times = one_round(kind, backend, groups, page_tokens, raw_first=r % 2 == 0)
            for k, v in times.items():
                best[k] = min(best.get(k, v), v)
    finally:
        backend.close()
        if server is not None:
            server.stop()
    gbps = {k: total / v / 1e9 for k, v in best.items()}
    return {"backend": kind.value, "bytes": total,
            **{f"{k}_gbps": round(v, 3) for k, v in gbps.items()},
            "put_ratio": round(gbps["ours_put"] / gbps["raw_put"], 3),
            "get_ratio": round(gbps["ours_get"] / gbps["raw_get"], 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backends", nargs="+", default=[k.value for k in BackendKind],
                    choices=[k.value for k in BackendKind])
    ap.add_argument("--groups", type=int, default=4, help="groups per round")
    ap.add_argument("--pages", type=int, default=1, help="64-token pages per group")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    if min(args.groups, args.pages, args.repeats) < 1:
        ap.error("--groups, --pages and --repeats must be ≥ 1")
    page_tokens, page_bytes, state_bytes = sizes()
    groups = make_groups(args.groups, args.pages, page_tokens, page_bytes, state_bytes)
    results = [bench(BackendKind(k), groups, page_tokens, args.repeats) for k in args.backends]
    print(json.dumps({"page_bytes": page_bytes, "state_bytes": state_bytes,
                      "pages_per_group": args.pages, "groups": args.groups,
                      "results": results}, indent=2))


if __name__ == "__main__":
    main()
