"""Device pools and the host tier for the tiny model, built with the real pool classes.

``kvledger.pools.build`` sizes pools from a capacity plan of a real model; the tiny model
states its sizes directly (``PoolSizes``) and gets the same classes: a DSA token pool
(latent rows, index keys, compress tail), a state pool, request rows, a paged token
allocator and a state-slot allocator, each with its NULL page / slot reserved. The host tier (``HostTier``) is a
``HostPoolGroup`` of KV, INDEXER and MAMBA host pools driven by a ``HiCacheController``;
``reproduce_missing_indexer_defect=True`` builds the article release's group, which has no
INDEXER pool (the controller refuses that group otherwise).

>>> from kvledger.engine.config import TinyConfig
>>> pools = build_device_pools(TinyConfig(), PoolSizes(num_pages=4, page_tokens=16))
>>> pools.kv.full_kv_pool.kv_buffer[0].shape  # (4 pages + NULL page) × 16 tokens, 132 B rows
torch.Size([80, 132])
>>> pools.kv.full_layer(3), pools.kv.linear_layer(4), pools.state_allocator.capacity
(0, 3, 16)
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from kvledger.cache.store_codec import PageCodec
from kvledger.cache.store_tier import PrefetchTimeout, StoreTier
from kvledger.engine.config import CONV_DTYPE, TinyConfig
from kvledger.host.controller import HiCacheController
from kvledger.host.device import DeviceBytes, DeviceSide
from kvledger.host.group import HostPoolGroup
from kvledger.host.kv_pool import HostKVPool
from kvledger.host.layout import HostLayout
from kvledger.host.policy import BackupPolicy
from kvledger.host.side_pools import HostIndexerPool, HostStatePool
from kvledger.host.state_backup import HostStateBackup
from kvledger.pools.dsa import DsaTokenPool
from kvledger.pools.errors import IntegrityError
from kvledger.pools.hybrid import HybridLinearKVPool
from kvledger.pools.ids import StateSlotAllocator
from kvledger.pools.paged import PagedTokenAllocator
from kvledger.pools.req_to_token import ReqToTokenPool
from kvledger.pools.state import MambaPool
from kvledger.sglang.specs import TailSpec
from kvledger.store.backend import StoreBackend
from kvledger.store.keys import Namespace
from kvledger.tree import RadixTree


@dataclass(frozen=True, slots=True, kw_only=True)
class PoolSizes:
    page_tokens: int = 16  # a multiple of kpool; small so prompts cross many pages
    num_pages: int = 64  # usable token pages (the NULL page comes on top)
    num_state_slots: int = 16  # usable state slots (NULL_SLOT on top)
    max_running_requests: int = 8  # request rows
    max_context_tokens: int = 1024  # width of a request row

    def __post_init__(self) -> None:
        for name in ("page_tokens", "num_pages", "num_state_slots", "max_running_requests",
                     "max_context_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"PoolSizes.{name}: expected a positive integer, got {value!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class TinyPools:
    kv: HybridLinearKVPool
    token_allocator: PagedTokenAllocator
    state_allocator: StateSlotAllocator

    def check_integrity(self) -> None:
        self.kv.check_integrity()
        self.token_allocator.check_integrity()
        self.state_allocator.check_integrity()
        if self.token_allocator.num_token_slots != self.kv.full_kv_pool.num_token_slots:
            raise IntegrityError("token allocator and full KV pool disagree on token slots")
        assert self.kv.mamba_pool is not None
        if self.state_allocator.capacity + 1 != self.kv.mamba_pool.num_slots:
            raise IntegrityError("state allocator capacity + NULL_SLOT != state pool slots")


def build_device_pools(cfg: TinyConfig, sizes: PoolSizes) -> TinyPools:
    if sizes.page_tokens % cfg.index_kpool:
        raise ValueError(f"PoolSizes.page_tokens: {sizes.page_tokens} does not hold whole "
                         f"kpool-{cfg.index_kpool} groups")
    allocator = PagedTokenAllocator(num_pages=sizes.num_pages, page_tokens=sizes.page_tokens)
    tail = TailSpec(rows=sizes.max_running_requests + 2,  # req_to_token rows + 1, as SGLang
                    width_tokens=cfg.index_kpool, head_dim=cfg.index_head_dim)
    full = DsaTokenPool(spec=cfg.latent_spec, index_spec=cfg.index_spec(page_tokens=sizes.page_tokens),
                        has_indexer=(True,) * len(cfg.full_layer_ids),
                        num_token_slots=allocator.num_token_slots, tail=tail, device="cpu")
    mamba = MambaPool(spec=cfg.state_spec, num_layers=len(cfg.linear_layer_ids),
                      num_slots=sizes.num_state_slots + 1, conv_dtype=CONV_DTYPE,
                      temporal_dtype=cfg.temporal_torch_dtype, device="cpu")
    rows = ReqToTokenPool(num_rows=sizes.max_running_requests,
                          max_context_tokens=sizes.max_context_tokens, device="cpu")
    kv = HybridLinearKVPool(full_kv_pool=full, mamba_pool=mamba, req_to_token_pool=rows,
                            full_layer_ids=cfg.full_layer_ids,
                            linear_layer_ids=cfg.linear_layer_ids, num_layers=cfg.num_layers)
    return TinyPools(kv=kv, token_allocator=allocator,
                     state_allocator=StateSlotAllocator(num_slots=sizes.num_state_slots))


@dataclass(frozen=True, slots=True, kw_only=True)
class HostTier:
    num_pages: int = 64  # host token pages (the page is the device page)
    num_state_slots: int = 16  # host state slots (one holds a whole device state slot)
    policy: BackupPolicy = BackupPolicy.WRITE_THROUGH
    layout: HostLayout = HostLayout.PAGE_FIRST
    # True: no host copy of index keys, sglang-0.5.21's defect (loadbacks leave stale keys)
    reproduce_missing_indexer_defect: bool = False
    host_row_bytes: int | None = None  # None: the device row; anything else is refused
    state_backup: HostStateBackup = HostStateBackup.ALL  # which states get host room


def build_host_tier(pools: TinyPools, tree: RadixTree, tier: HostTier) -> HiCacheController:
    """Host pools mirroring ``pools`` byte for byte, and the controller over ``tree``; every
    loadback's device bytes are checked against digests taken at backup, keyed by the prefix
    each page holds (the controller's default, ``kvledger.host.digests``)."""
    kv = pools.kv
    page = pools.token_allocator.page_tokens
    dev = DeviceBytes.of(kv.full_kv_pool, kv.mamba_pool, page_tokens=page)
    conv_bytes, temporal_bytes = dev.state_part_bytes
    host_kv = HostKVPool(num_pages=tier.num_pages, page_tokens=page,
                         num_layers=kv.full_kv_pool.num_layers,
                         device_row_bytes=dev.device_row_bytes,
                         host_row_bytes=tier.host_row_bytes, layout=tier.layout)
    indexer = None
    if not tier.reproduce_missing_indexer_defect:
        indexer = HostIndexerPool(num_pages=tier.num_pages, page_tokens=page,
                                  num_layers=len(dev.index_pages),
                                  page_bytes=dev.index_page_bytes, layout=tier.layout)
    assert kv.mamba_pool is not None
    states = HostStatePool(num_slots=tier.num_state_slots, num_layers=kv.mamba_pool.num_layers,
                           conv_bytes=conv_bytes, temporal_bytes=temporal_bytes,
                           layout=tier.layout)
    side = DeviceSide(bytes=dev, token_allocator=pools.token_allocator,
                      state_allocator=pools.state_allocator, mamba_pool=kv.mamba_pool)
    group = HostPoolGroup(kv=host_kv, indexer=indexer, state=states)
    return HiCacheController(
        tree=tree, device=side, host=group, policy=tier.policy, synchronous=True,
        reproduce_missing_indexer_defect=tier.reproduce_missing_indexer_defect,
        state_backup=tier.state_backup)


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreTierSpec:
    """The store tier below host: a backend client and the write policy (the tiny model's
    namespace is derived from its config, so two engines with one config share objects)."""

    backend: StoreBackend
    policy: BackupPolicy = BackupPolicy.WRITE_THROUGH
    timeout: PrefetchTimeout = field(default_factory=PrefetchTimeout)
    salt: str = ""  # the namespace's salt: instances share objects only with equal salts


def build_store_tier(cfg: TinyConfig, pools: TinyPools, spec: StoreTierSpec) -> StoreTier:
    codec = PageCodec.of(pools.kv, page_tokens=pools.token_allocator.page_tokens)
    model = "tiny-" + hashlib.sha256(repr(cfg).encode()).hexdigest()[:12]
    return StoreTier(backend=spec.backend, namespace=Namespace(model=model, layout=codec.layout,
                                                               salt=spec.salt),
                     codec=codec, policy=spec.policy, timeout=spec.timeout)
