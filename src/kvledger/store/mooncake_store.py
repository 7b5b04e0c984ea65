"""MooncakeStore: the store tier on Mooncake Store (the `mooncake-transfer-engine` wheel).

A client joins a cluster through its master (``mooncake_master``, which here also serves the
transfer engine's HTTP metadata) and mounts ``segment_bytes`` of its own DRAM into the
distributed pool; objects land in any mounted segment. Transport: TCP (no RDMA on these
machines). Behaviour this backend relies on, observed on the 0.3.13 wheel:

* a batch put or get stages its bytes in the client's local buffer: a batch larger than
  ``local_buffer_bytes`` fails whole (``-600``), so batches are cut to fit it, and one object
  must fit it alone;
* ``get_batch`` returns ``b""`` for a missing object *and* for a failed read, so empty
  answers are checked with ``batch_is_exist`` (1 present, 0 absent, −1 error → unavailable);
  an object present but unreadable is a miss (``unreadable`` counts them): a read must end
  inside the object's lease, and one that outlives it fails with ``LEASE_EXPIRED``;
* an object is leased for ``default_kv_lease_ttl`` (10 s by default) after each write or read
  and ``remove`` inside the lease fails (``-706``; ``-704`` absent): delete reports False and
  the object stays — it is content-addressed, so a stale copy is still correct bytes;
* putting a key that exists succeeds without rewriting it;
* the client is not safe to call from two threads once its master is gone (a put racing a
  read segfaulted in testing), so every call holds one lock, and a client that lost its
  master stays down: each later call raises `StoreUnavailable` without touching it (open a
  new client to rejoin).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence

from kvledger.store.backend import BackendKind, Payload, StoreBackend, StoreUnavailable

MC_OK = 0


def _batches(sizes: Sequence[int], limit: int) -> list[range]:
    """Consecutive index ranges whose byte sums fit `limit` (an oversized item alone)."""
    out, start, acc = [], 0, 0
    for i, size in enumerate(sizes):
        if i > start and acc + size > limit:
            out.append(range(start, i))
            start, acc = i, 0
        acc += size
    if start < len(sizes):
        out.append(range(start, len(sizes)))
    return out


def _guarded(method):
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        with self._lock:
            if self._down is not None:
                raise StoreUnavailable(self._down)
            try:
                return method(self, *args, **kwargs)
            except StoreUnavailable as e:
                self._down = f"{e} (client down since)"
                raise
    return call


class MooncakeStore(StoreBackend):
    kind = BackendKind.MOONCAKE

    def __init__(self, master: str, metadata_url: str, *, segment_bytes: int = 256 << 20,
                 local_buffer_bytes: int = 64 << 20, local_hostname: str = "127.0.0.1") -> None:
        try:
            from mooncake.store import MooncakeDistributedStore
        except ImportError as e:  # the `store` extra
            raise StoreUnavailable("the Mooncake backend needs the `mooncake-transfer-engine` "
                                   "wheel: pip install 'kvledger[store]'") from e
        self.address = master
        self.local_buffer_bytes = local_buffer_bytes
        self.client = MooncakeDistributedStore()
        rc = self.client.setup(local_hostname, metadata_url, segment_bytes, local_buffer_bytes,
                               "tcp", "", master)
        if rc != MC_OK:
            raise StoreUnavailable(f"Mooncake master at {master}: setup failed (code {rc})")
        self._closed = False
        self._lock = threading.Lock()
        self._down: str | None = None
        self.unreadable = 0  # objects present whose read failed (read as misses)

    def _limit(self) -> int:
        # Half the buffer: the client keeps a little of it for its own bookkeeping.
        return self.local_buffer_bytes // 2

    @_guarded
    def exists(self, keys: Sequence[str]) -> list[bool]:
        if not keys:
            return []
        return self._exists(keys)

    def _exists(self, keys: Sequence[str]) -> list[bool]:
        codes = self.client.batch_is_exist(list(keys))
        if any(c < 0 for c in codes):
            raise StoreUnavailable(f"Mooncake master at {self.address}: exists failed")
        return [c == 1 for c in codes]

    @_guarded
    def get(self, keys: Sequence[str], sizes: Sequence[int] | None = None) -> list[bytes | None]:
        # Without sizes every key is read in a batch of its own: one unknown-size object
        # might fill the buffer alone.
        if not keys:
            return []
        keys = list(keys)
        cuts = (_batches(sizes, self._limit()) if sizes is not None
                else [range(i, i + 1) for i in range(len(keys))])
        out: list[bytes | None] = []
        for cut in cuts:
            out.extend(self.client.get_batch(keys[cut.start:cut.stop]))
        empty = [i for i, v in enumerate(out) if not v]
        if empty:
            present = self._exists([keys[i] for i in empty])
            for i, there in zip(empty, present, strict=True):
                self.unreadable += int(there)
                out[i] = None
        return out

    @_guarded
    def put(self, items: Sequence[tuple[str, Payload]]) -> list[bool]:
        if not items:
            return []
        done: list[bool] = []
        sizes = [len(memoryview(v)) for _, v in items]
        for cut in _batches(sizes, self._limit()):
            part = items[cut.start:cut.stop]
            if max(sizes[cut.start:cut.stop]) > self._limit():
                done.extend([False] * len(part))  # cannot be staged at all
                continue
            rc = self.client.put_batch([k for k, _ in part], [v for _, v in part])
            if rc != MC_OK:
                # A dead master and a full pool both answer here; tell them apart.
                self._exists([part[0][0]])
            done.extend([rc == MC_OK] * len(part))
        return done

    @_guarded
    def delete(self, keys: Sequence[str]) -> list[bool]:
        if not keys:
            return []
        return [c == MC_OK for c in self.client.batch_remove(list(keys))]

    def close(self) -> None:
        with self._lock:
            self._close()

    def _close(self) -> None:
        if not self._closed:
            self._closed = True
            self._down = f"Mooncake client of {self.address} is closed"
            self.client.close()
