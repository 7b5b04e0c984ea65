"""Device pools for the tiny model, built from its specs with the real pool classes.

``kvledger.pools.build`` sizes pools from a capacity plan of a real model; the tiny model
states its sizes directly (``PoolSizes``) and gets the same classes: a DSA token pool
(latent rows, index keys, compress tail), a state pool, request rows, a paged token
allocator and a state-slot allocator, each with its NULL page / slot reserved.

>>> from kvledger.engine.config import TinyConfig
>>> pools = build_device_pools(TinyConfig(), PoolSizes(num_pages=4, page_tokens=16))
>>> pools.kv.full_kv_pool.kv_buffer[0].shape  # (4 pages + NULL page) × 16 tokens, 132 B rows
torch.Size([80, 132])
>>> pools.kv.full_layer(3), pools.kv.linear_layer(4), pools.state_allocator.capacity
(0, 3, 16)
"""

from __future__ import annotations

from dataclasses import dataclass

from kvledger.engine.config import CONV_DTYPE, TinyConfig
from kvledger.pools.dsa import DsaTokenPool
from kvledger.pools.errors import IntegrityError
from kvledger.pools.hybrid import HybridLinearKVPool
from kvledger.pools.ids import StateSlotAllocator
from kvledger.pools.paged import PagedTokenAllocator
from kvledger.pools.req_to_token import ReqToTokenPool
from kvledger.pools.state import MambaPool
from kvledger.specs import TailSpec


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
