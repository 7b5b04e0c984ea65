"""The store tier (L3) in a replay: write-through of every cached prefix, restores on admission.

In accounting mode the store is `kvledger.cache.store_accounting.StoreAccounting`. The replay
drives it at two points, as the real tier's hooks sit on the facade:

    cached   after each commit that caches a prefix (an unfinished request's forward, a
             finished request's release) the group ending at the cached prefix is put
             (write-through; its put time is counted, not waited for — writes are queued)
    admit    past the device/host hit, the deepest stored prefix (≤ prompt − 1 tokens,
             whole pages, manifests chained to the root) is restored: its tokens are not
             prefill-computed, and the step that admits the request waits the read's time
             (latency per round trip + bytes / bandwidth)

The restored tokens take the request's own reserved pages, exactly as computing them would,
so device memory is unchanged; only prefill compute becomes transfer time.

>>> from kvledger.store.backend import BackendKind
>>> L3Config(capacity_bytes=1 << 30, backend=BackendKind.REDIS).link().get_gbps
0.3
"""

from __future__ import annotations

from dataclasses import dataclass

from kvledger.cache.store_accounting import StoreAccounting, StoreLink, prefix_chain
from kvledger.store.backend import BackendKind


@dataclass(frozen=True, slots=True, kw_only=True)
class L3Config:
    capacity_bytes: int  # --l3-size
    backend: BackendKind = BackendKind.MOONCAKE  # --l3-backend
    custom_link: StoreLink | None = None  # None: the backend's default rates

    def link(self) -> StoreLink:
        return self.custom_link or StoreLink.default(self.backend)


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreSummary:
    backend: BackendKind
    capacity_bytes: int
    used_bytes: int
    objects: int
    groups: int
    put_groups: int
    put_bytes: int
    put_ms: float  # write time the store spent (queued, not waited for)
    refused_groups: int  # larger than the whole store
    evicted_groups: int
    restores: int  # admissions that restored a prefix from the store
    restored_tokens: int
    get_bytes: int
    get_ms: float  # read time requests waited


class SimStore:
    def __init__(self, config: L3Config, *, page_tokens: int, token_bytes: int,
                 state_bytes: int) -> None:
        if state_bytes <= 0:
            raise ValueError("--l3-size: the store tier keeps a node's state with its pages; "
                             "a model without linear-attention layers has none")
        self.page = page_tokens
        self.store = StoreAccounting(capacity_bytes=config.capacity_bytes,
                                     page_bytes=page_tokens * token_bytes,
                                     state_bytes=state_bytes, link=config.link())
        self.restored_tokens = 0

    def chain(self, seq_keys) -> list[int]:
        return prefix_chain(seq_keys)

    def restore(self, chain: list[int], *, hit_tokens: int, prompt_tokens: int) -> tuple[int, float]:
        """(tokens restored past the hit, read ms) for a request just admitted."""
        start = hit_tokens // self.page
        end = self.store.match(chain, start_pages=start, max_pages=(prompt_tokens - 1) // self.page)
        if end <= start:
            return 0, 0.0
        ms = self.store.record_get(chain, start, end)
        tokens = (end - start) * self.page
        self.restored_tokens += tokens
        return tokens, ms

    def cached(self, chain: list[int], cached_tokens: int) -> None:
        if cached_tokens >= self.page:
            self.store.put(chain, end_pages=cached_tokens // self.page)

    def summary(self) -> StoreSummary:
        s = self.store
        s.check_integrity()
        return StoreSummary(
            backend=s.link.backend, capacity_bytes=s.capacity_bytes, used_bytes=s.used_bytes,
            objects=s.objects, groups=len(s.groups), put_groups=s.put_groups,
            put_bytes=s.put_bytes, put_ms=round(s.put_ms, 3), refused_groups=s.refused_groups,
            evicted_groups=s.evicted_groups, restores=s.get_groups,
            restored_tokens=self.restored_tokens, get_bytes=s.get_bytes,
            get_ms=round(s.get_ms_total, 3))
