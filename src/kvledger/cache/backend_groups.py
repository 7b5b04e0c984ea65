"""BackendGroups: the store tier's groups in real bytes, on a store server (or a directory).

The `GroupStore` of real-bytes mode (`kvledger.cache.l3_tier`): a backend client
(`kvledger.store.backend`), the namespace that salts every key, the `PageCodec` that copies
device pages and state slots in and out, and two worker queues. A write copies the group's
bytes out of the pools at once (the device slots may be reused right after) and puts them
on the write worker (`kvledger.store.transfer.write_group`: objects, then the manifest); a
read runs `read_prefix` on the read worker while the request waits, up to the timeout.
Prefix ids are `kvledger.store.keys.page_keys` over the tree's token ids.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from kvledger.cache.store_codec import PageCodec
from kvledger.store.backend import StoreBackend
from kvledger.store.group import group_write
from kvledger.store.group_store import GroupAck, PrefixRead
from kvledger.store.keys import Namespace, page_keys
from kvledger.store.queue import StoreQueue
from kvledger.store.transfer import read_prefix, write_group


class BackendGroups:
    holds_bytes = True

    def __init__(self, backend: StoreBackend, namespace: Namespace, codec: PageCodec) -> None:
        self.backend, self.namespace, self.codec = backend, namespace, codec
        self.kind = backend.kind
        self.writes, self.reads = StoreQueue(), StoreQueue()

    @property
    def page_bytes(self) -> int:
        return self.codec.page_bytes

    @property
    def state_bytes(self) -> int:
        return self.codec.state_bytes

    def prefix_ids(self, tree_keys: np.ndarray) -> list[str]:
        return page_keys(self.namespace, tree_keys, page_tokens=self.codec.page_tokens)

    def write(self, ids: Sequence[str], *, first_page: int, page_ids: np.ndarray,
              state_slot: int) -> None:
        group = group_write(self.namespace, ids, first_page=first_page,
                            pages=self.codec.read_pages(page_ids),
                            state=self.codec.read_state(state_slot))
        self.writes.submit(lambda: write_group(self.backend, group),
                           tag=(ids[-1], group.payload_bytes))

    def acks(self, *, wait_s: float | None = None) -> list[GroupAck]:
        done = self.writes.poll() if wait_s is None else self.writes.drain(timeout_s=wait_s)
        return [GroupAck(group=a.tag[0], stored=a.error is None and bool(a.result),
                         error=a.error, payload_bytes=a.tag[1]) for a in done]

    def read(self, ids: Sequence[str], *, start_page: int, min_end_page: int,
             timeout_s: float) -> PrefixRead:
        began = time.perf_counter()
        ticket = self.reads.submit(lambda: read_prefix(
            self.backend, self.namespace, ids, start_page=start_page, min_end_page=min_end_page))
        got = self.reads.wait(ticket, timeout_s=timeout_s)
        return replace(got, wait_ms=(time.perf_counter() - began) * 1000)

    def install(self, got: PrefixRead, token_slots: np.ndarray, state_slot: int) -> None:
        page = self.codec.page_tokens
        self.codec.write_pages(token_slots[::page] // page, got.pages)
        self.codec.write_state(state_slot, got.state)

    @property
    def pending_writes(self) -> int:
        return self.writes.pending

    @property
    def pending_reads(self) -> int:
        return self.reads.pending

    def close(self) -> None:
        self.writes.close()
        self.reads.close()
