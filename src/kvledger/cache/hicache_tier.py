"""HiCacheTier: SGLang's HiCache (`kvledger.host.HiCacheController`) as the facade's `HostTier`.

Nothing of the controller is re-implemented: write policies, ancestor-first backups,
loadback stitching, host LRU eviction and write_back's backup-before-evict all run in
`kvledger.host`. This adapter forwards the facade's calls and keeps what reports need (host
peaks, prompt tokens served from host). It serves both modes:

* real bytes (the reference engine): the controller over the engine's pools, tree in tokens;
* accounting (the simulator, `for_plan`): the plan's device pools built on torch's "meta"
  device (shapes, no memory) and seen through `DeviceBytes.whole_pages()` — one row per device
  page, because the simulator's tree keys whole pages and the controller requires tree page
  == device page == host page. The host group is built on "meta" too, sized by the plan's
  host ledger (host tokens / P pages and its state slots); transfers go to `IndexOnlyMover`
  (pairs checked, no byte moves). Bytes are pages × host page bytes + slots × state bytes,
  exact because host rows equal device rows.

The article's host tier (sglang-0.5.21: 512 B host rows for 528 B device rows, no index-key
copy) cannot be built (`HostRowError`); the simulator runs the corrected host pools and says so.

>>> import numpy as np
>>> from kvledger.sglang.deploy import Deployment, KVDtype
>>> from kvledger.sglang.plan import make_plan
>>> from kvledger.cache.accounting import accounting_cache
>>> plan = make_plan(deployment=Deployment(kv_cache_dtype=KVDtype.FP8_E4M3,
...                                        enable_hierarchical_cache=True))
>>> cache = accounting_cache(plan, host_policy=BackupPolicy.WRITE_THROUGH)
>>> s = cache.tier.stats()
>>> s.page_bytes, s.page_bytes == 64 * 7260
(464640, True)
>>> s.capacity_pages, s.capacity_slots  # ratio 2: (2·7,780,672 // 64 + 1) pages, 2·343 + 1
(243147, 687)
"""

from __future__ import annotations

from collections.abc import Iterable

from kvledger.cache.host_stats import HostStats
from kvledger.cache.tier import Evictions, HostUsage
from kvledger.host.build import build_host_group, host_sizes
from kvledger.host.controller import HiCacheController
from kvledger.host.device import DeviceBytes, DeviceSide
from kvledger.host.movers import IndexOnlyMover
from kvledger.host.policy import BackupPolicy
from kvledger.host.results import LoadbackResult
from kvledger.host.state_backup import HostStateBackup
from kvledger.pools.build import build_pools
from kvledger.pools.ids import StateSlotAllocator
from kvledger.pools.paged import PagedTokenAllocator
from kvledger.sglang.plan import SglangPlan
from kvledger.tree import EvictResult, InsertResult, LockReceipt, MatchResult, Node, RadixTree


class HiCacheTier:
    def __init__(self, ctrl: HiCacheController, *, unit_tokens: int,
                 state_share: float | None = None) -> None:
        self.ctrl = ctrl
        self.unit_tokens = unit_tokens  # tokens per tree unit (1, or P when keying pages)
        self.state_share = state_share  # --hicache-state-share the pools were sized with
        self.gained_units = 0  # hit units admitted requests got through loadbacks
        self.peak_pages_used = 0
        self.peak_slots_used = 0

    @classmethod
    def for_plan(cls, plan: SglangPlan, policy: BackupPolicy, tree: RadixTree,
                 pages: PagedTokenAllocator, slots: StateSlotAllocator | None, *,
                 state_backup: HostStateBackup = HostStateBackup.ALL) -> HiCacheTier:
        """Accounting mode: the controller for `plan`'s rank over a page-keyed tree and the
        cache's own allocators (page ids are the "token slots")."""
        page = plan.layout.page_tokens
        pools = build_pools(plan, "meta")
        mamba = pools.kv.mamba_pool
        dev = DeviceBytes.of(pools.kv.full_kv_pool, mamba, page_tokens=page).whole_pages()
        state_rows = 0 if mamba is None else mamba.conv.shape[1]
        want_rows = 0 if slots is None else slots.capacity + 1
        if (dev.num_token_slots, state_rows) != (pages.num_token_slots, want_rows):
            raise ValueError(
                f"host tier: the plan's device pools have {dev.num_token_slots - 1} pages and "
                f"{max(state_rows - 1, 0)} state slots, the cache {pages.num_pages} and "
                f"{max(want_rows - 1, 0)}")
        host_tokens, host_slots = host_sizes(pools)
        group = build_host_group(dev, host_tokens=host_tokens // page,
                                 host_state_slots=host_slots, device="meta")
        device = DeviceSide(bytes=dev, token_allocator=pages, state_allocator=slots,
                            mamba_pool=None)  # requests' state copies are not simulated
        ctrl = HiCacheController(tree=tree, device=device, host=group, policy=policy,
                                 mover=IndexOnlyMover(page_tokens=1), state_backup=state_backup)
        return cls(ctrl, unit_tokens=page,
                   state_share=None if plan.host is None else plan.host.state_share)

    # ---- the facade's calls ----------------------------------------------------------------

    def on_insert(self, result: InsertResult) -> object:
        outcome = self.ctrl.on_insert(result)
        self._note_peaks()
        return outcome

    def on_hit(self, node: Node) -> object:
        outcome = self.ctrl.on_hit(node)
        self._note_peaks()
        return outcome

    def evict_device(self, *, full_tokens: int = 0, mamba_slots: int = 0) -> EvictResult:
        result = self.ctrl.evict_device(full_tokens=full_tokens, mamba_slots=mamba_slots)
        self._note_peaks()  # write_back backs victims up first
        return result

    def loadback(self, match: MatchResult, *, request_slot: int | None = None) -> LoadbackResult:
        loaded = self.ctrl.loadback(match, request_slot=request_slot)
        gained = loaded.hit_tokens - match.device_hit_length
        if loaded.status.usable and gained > 0:
            self.gained_units += gained
        return loaded

    # ---- accounting ------------------------------------------------------------------------

    def _used(self) -> tuple[int, int]:
        host = self.ctrl.host
        return host.kv.pages.num_used, 0 if host.state is None else host.state.slots.num_used

    def _note_peaks(self) -> None:
        pages, slots = self._used()
        if pages > self.peak_pages_used:
            self.peak_pages_used = pages
        if slots > self.peak_slots_used:
            self.peak_slots_used = slots

    def serves(self, tree: RadixTree, tokens: PagedTokenAllocator,
               states: StateSlotAllocator | None) -> bool:
        device = self.ctrl.device
        return (self.ctrl.tree is tree and device.token_allocator is tokens
                and device.state_allocator is states)

    def device_evictions(self) -> Evictions:
        t = self.ctrl.traffic
        return Evictions(full=t.device_evicted_tokens, states=t.device_evicted_state_slots)

    def usage(self) -> HostUsage:
        pages, slots = self._used()
        t = self.ctrl.traffic
        return HostUsage(pages_used=pages, slots_used=slots, backup_pages=t.backup_tokens,
                         loadback_pages=t.loadback_tokens)

    def stats(self) -> HostStats:
        t, host = self.ctrl.traffic, self.ctrl.host
        return HostStats(
            policy=self.ctrl.policy.policy, state_backup=self.ctrl.state_backup.policy,
            declined_state_backups=t.declined_state_backups, state_share=self.state_share,
            capacity_pages=host.kv.pages.capacity,
            capacity_slots=0 if host.state is None else host.state.slots.capacity,
            page_bytes=host.page_bytes, slot_bytes=host.state_slot_bytes,
            backup_pages=t.backup_tokens, backup_slots=t.backup_state_slots,
            backup_bytes=host.transfer_bytes(num_tokens=t.backup_tokens,
                                             num_state_slots=t.backup_state_slots),
            loadback_pages=t.loadback_tokens, loadback_slots=t.loadback_state_slots,
            loadback_bytes=host.transfer_bytes(num_tokens=t.loadback_tokens,
                                               num_state_slots=t.loadback_state_slots),
            host_evicted_pages=t.host_evicted_tokens, host_evicted_slots=t.host_evicted_state_slots,
            loadback_hit_tokens=self.gained_units * self.unit_tokens,
            peak_pages_used=self.peak_pages_used, peak_slots_used=self.peak_slots_used,
        )

    def check_integrity(self, request_receipts: Iterable[LockReceipt] | None = None) -> None:
        """Both tiers against the tree and every lock owned (`kvledger.host.tiers`), and the
        peaks within capacity."""
        self.ctrl.check_integrity(request_receipts)
        stats = self.stats()
        if stats.peak_pages_used > stats.capacity_pages or (
                stats.peak_slots_used > stats.capacity_slots):
            raise RuntimeError(f"host peaks {stats.peak_pages_used} pages / "
                               f"{stats.peak_slots_used} slots exceed the host pools")
