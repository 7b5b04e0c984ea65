"""HiCacheTier: the simulator's host tier — the real HiCacheController in accounting mode.

Nothing of the controller is re-implemented here: write policies, ancestor-first backups,
loadback stitching, host LRU eviction and write_back's backup-before-evict all run in
`kvledger.host` with real indices and locks. This adapter only builds it for a plan and
translates the simulator's calls.

Geometry — why one host page is one simulator key. The replay's tree keys whole pages (one
key per P-token page, a tree page of one key), and the controller requires tree page ==
device page == host page. So the tier is built in whole-page units instead of tokens:

* device: the plan's own device pools, built on torch's "meta" device (shapes, no memory)
  and seen through `DeviceBytes.whole_pages()`: one row per device page — the P token rows
  of a full layer, P·B bytes — with index-key pages and state slots as they are;
* host: `build_host_group` over that view, also on "meta": one host page holds one device
  page (KV rows of every full layer plus its index-key pages), one host state slot one
  whole state; sized by the plan's host ledger (--hicache-ratio / --hicache-size, our view):
  host tokens / P pages and its state slots;
* allocators: the replay's own (`DeviceCache`), page ids being the "token slots".

Transfers go to `IndexOnlyMover`, the null copy backend: the pairs are checked, no byte
moves (the pools own no memory anyway). Bytes are counted as pages × host page bytes +
slots × state slot bytes, which is the host ledger's per-token bytes × P per page — exact,
because host rows equal device rows.

The article's host tier (sglang-0.5.21: 512 B host rows for 528 B device rows, no index-key
copy) cannot be built (`HostRowError`): the replay always runs the corrected host pools and
says so in its notes.

>>> import numpy as np
>>> from kvledger.deploy import Deployment, KVDtype
>>> from kvledger.plan import make_plan
>>> from kvledger.sim.device_cache import DeviceCache
>>> plan = make_plan(deployment=Deployment(kv_cache_dtype=KVDtype.FP8_E4M3,
...                                        enable_hierarchical_cache=True))
>>> cache = DeviceCache(num_pages=plan.capacity.max_total_tokens // 64,
...                     num_slots=plan.capacity.state_slots, grid_pages=1,
...                     host=HiCacheTier.factory(plan, BackupPolicy.WRITE_THROUGH))
>>> _ = cache.insert(np.arange(3), cache.alloc_pages(3), int(cache.alloc_slots(1)[0]))
>>> s = cache.host.stats()  # write_through: 3 pages and their state backed up on insert
>>> s.backup_pages, s.backup_slots, s.page_bytes, s.page_bytes == 64 * 7260
(3, 1, 464640, True)
>>> s.backup_bytes == 3 * 464640 + 147619840  # 3 pages + 1 state slot of 147,619,840 B
True
>>> s.capacity_pages, s.capacity_slots  # ratio 2: (2·7,780,672 // 64 + 1) pages, 2·343 + 1
(243147, 687)
"""

from __future__ import annotations

from functools import partial

from kvledger.host.build import build_host_group, host_sizes
from kvledger.host.controller import HiCacheController
from kvledger.host.device import DeviceBytes, DeviceSide
from kvledger.host.movers import IndexOnlyMover
from kvledger.host.policy import BackupPolicy
from kvledger.plan import Plan
from kvledger.pools.build import build_pools
from kvledger.pools.ids import StateSlotAllocator
from kvledger.pools.paged import PagedTokenAllocator
from kvledger.sim.host_port import Evictions, HostStats, HostTier, HostTierFactory, HostUsage
from kvledger.tree.node import Node
from kvledger.tree.radix import RadixTree
from kvledger.tree.results import EvictResult, InsertResult, MatchResult


class HiCacheTier(HostTier):
    def __init__(self, ctrl: HiCacheController, *, page_tokens: int) -> None:
        self.ctrl = ctrl
        self.page_tokens = page_tokens
        self.gained_pages = 0  # usable hit pages admitted requests got through loadbacks
        self.peak_pages_used = 0
        self.peak_slots_used = 0

    @classmethod
    def factory(cls, plan: Plan, policy: BackupPolicy) -> HostTierFactory:
        return partial(cls.build, plan, policy)

    @classmethod
    def build(cls, plan: Plan, policy: BackupPolicy, tree: RadixTree,
              pages: PagedTokenAllocator, slots: StateSlotAllocator) -> HiCacheTier:
        """The controller for `plan`'s rank over the replay's tree and allocators."""
        page = plan.layout.page_tokens
        pools = build_pools(plan, "meta")
        mamba = pools.kv.mamba_pool
        dev = DeviceBytes.of(pools.kv.full_kv_pool, mamba, page_tokens=page).whole_pages()
        state_rows = 0 if mamba is None else mamba.conv.shape[1]
        if (dev.num_token_slots, state_rows) != (pages.num_token_slots, slots.capacity + 1):
            raise ValueError(
                f"host tier: the plan's device pools have {dev.num_token_slots - 1} pages and "
                f"{state_rows - 1} state slots, the replay {pages.num_pages} and "
                f"{slots.capacity}")
        host_tokens, host_slots = host_sizes(pools)
        group = build_host_group(dev, host_tokens=host_tokens // page,
                                 host_state_slots=host_slots, device="meta")
        device = DeviceSide(bytes=dev, token_allocator=pages, state_allocator=slots,
                            mamba_pool=None)  # requests' state copies are not simulated
        ctrl = HiCacheController(tree=tree, device=device, host=group, policy=policy,
                                 mover=IndexOnlyMover(page_tokens=1))
        return cls(ctrl, page_tokens=page)

    # ---- the replay's calls ----------------------------------------------------------------

    def evict_device(self, *, full_pages: int, mamba_slots: int) -> EvictResult:
        result = self.ctrl.evict_device(full_tokens=full_pages, mamba_slots=mamba_slots)
        self._note_peaks()  # write_back backs victims up first
        return result

    def after_insert(self, result: InsertResult) -> None:
        self.ctrl.on_insert(result)
        self._note_peaks()

    def after_hit(self, node: Node) -> None:
        self.ctrl.on_hit(node)
        self._note_peaks()

    def loadback(self, match: MatchResult) -> MatchResult:
        loaded = self.ctrl.loadback(match)
        gained = loaded.hit_tokens - match.device_hit_length  # tree tokens are pages here
        if not loaded.status.usable or gained <= 0:
            return match
        self.gained_pages += gained
        return match._replace(device_indices=loaded.device_indices, last_device_node=loaded.node,
                              host_hit_length=match.host_hit_length - gained,
                              mamba_src_slot=loaded.mamba_slot)

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

    def device_evictions(self) -> Evictions:
        t = self.ctrl.traffic
        return Evictions(pages=t.device_evicted_tokens, slots=t.device_evicted_state_slots)

    def usage(self) -> HostUsage:
        pages, slots = self._used()
        t = self.ctrl.traffic
        return HostUsage(pages_used=pages, slots_used=slots, backup_pages=t.backup_tokens,
                         loadback_pages=t.loadback_tokens)

    def stats(self) -> HostStats:
        t, host = self.ctrl.traffic, self.ctrl.host
        return HostStats(
            policy=self.ctrl.policy.policy, capacity_pages=host.kv.pages.capacity,
            capacity_slots=0 if host.state is None else host.state.slots.capacity,
            page_bytes=host.page_bytes, slot_bytes=host.state_slot_bytes,
            backup_pages=t.backup_tokens, backup_slots=t.backup_state_slots,
            backup_bytes=host.transfer_bytes(num_tokens=t.backup_tokens,
                                             num_state_slots=t.backup_state_slots),
            loadback_pages=t.loadback_tokens, loadback_slots=t.loadback_state_slots,
            loadback_bytes=host.transfer_bytes(num_tokens=t.loadback_tokens,
                                               num_state_slots=t.loadback_state_slots),
            host_evicted_pages=t.host_evicted_tokens, host_evicted_slots=t.host_evicted_state_slots,
            loadback_hit_tokens=self.gained_pages * self.page_tokens,
            peak_pages_used=self.peak_pages_used, peak_slots_used=self.peak_slots_used,
        )

    def check_integrity(self) -> None:
        """Both tiers against the tree (`kvledger.host.tiers`), and the peaks within capacity."""
        self.ctrl.check_integrity()
        stats = self.stats()
        if stats.peak_pages_used > stats.capacity_pages or (
                stats.peak_slots_used > stats.capacity_slots):
            raise RuntimeError(f"host peaks {stats.peak_pages_used} pages / "
                               f"{stats.peak_slots_used} slots exceed the host pools")
