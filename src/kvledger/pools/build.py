"""build_pools: allocate exactly what an SglangPlan says, optionally scaled down to fit a laptop.

Every tensor's shape comes from the plan's specs and counts, never from a second formula:

    full_kv_pool   (T + P) token slots × the token ledger's KV (and index-key) bytes
    mamba_pool     K + 1 state slots × the state ledger's conv and temporal bytes
    req_to_token   N + 1 rows × (context + 4 + draft tokens) int32      (side ledger)
    compress tail  N + 2 rows per indexer layer                          (side ledger)
    draft pool     (T + P) × the MTP draft ledger, when speculating

so allocated bytes equal ledger bytes by construction (`kvledger.pools.accounting` shows it).
A scaled-down build takes a plan re-planned on the planning side (`kvledger.sglang.scaling`) with
SGLang's own caps — `--max-total-tokens`,
`--max-mamba-cache-size`, `--max-running-requests` (the last two global, split over attention
DP) — so the small pools are a real plan, not a shrunken copy. The "meta" device builds
full-size pools that own no memory: shapes and bytes without allocating.

>>> from kvledger.sglang.plan import make_plan
>>> plan = make_plan(kv_cache_dtype="fp8_e4m3")  # the article's deployment, 100 GiB free
>>> full = build_pools(plan, "meta")  # full size, no memory: T = 7,780,672, K = 343
>>> full.kv.full_kv_pool.kv_buffer[0].shape, full.kv.mamba_pool.temporal.shape
(torch.Size([7780736, 528]), torch.Size([34, 344, 64, 128, 128]))
>>> small = build_pools(plan, "meta", ScaleDown(max_total_tokens=256, max_mamba_cache_size=5))
>>> cap = small.plan.capacity
>>> cap.max_total_tokens, cap.state_slots, cap.max_running_requests
(256, 5, 1)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from kvledger.model.arch import AttnKind
from kvledger.pools.dsa import DsaTokenPool
from kvledger.pools.errors import IntegrityError
from kvledger.pools.gqa import GqaKVPool
from kvledger.pools.hybrid import FullPool, HybridLinearKVPool
from kvledger.pools.ids import StateSlotAllocator
from kvledger.pools.latent import LatentKVPool
from kvledger.pools.paged import PagedTokenAllocator
from kvledger.pools.req_to_token import ReqToTokenPool
from kvledger.pools.state import MambaPool
from kvledger.sglang.deploy import StateDtype
from kvledger.sglang.draftlayers import allocated_draft_layers
from kvledger.sglang.ledger import REQ_TO_TOKEN_EXTRA_TOKENS, elides_shared_index_keys
from kvledger.sglang.plan import SglangPlan
from kvledger.sglang.resolve import CacheLayout
from kvledger.sglang.scaling import ScaleDown, scale_plan
from kvledger.sglang.specs import GqaRowSpec, LatentRowSpec, TailSpec

__all__ = ["DevicePools", "ScaleDown", "build_pools", "resolve_device", "scale_plan"]

STATE_DTYPES = {
    StateDtype.FLOAT32: torch.float32,
    StateDtype.BFLOAT16: torch.bfloat16,
    StateDtype.FLOAT16: torch.float16,
}
CONV_DTYPE = torch.bfloat16  # kvledger.sglang.resolve.CONV_ITEMSIZE: conv state follows the model dtype
@dataclass(frozen=True, slots=True, kw_only=True)
class DevicePools:
    """Everything one rank allocates on its device, and the plan it was built from."""

    plan: SglangPlan  # after any ScaleDown: the T, K, N these pools hold
    device: torch.device
    kv: HybridLinearKVPool  # full_kv_pool, mamba_pool, req_to_token_pool
    token_allocator: PagedTokenAllocator
    state_allocator: StateSlotAllocator | None
    draft_kv_pool: FullPool | None  # MTP draft layers' own token pool

    def check_integrity(self) -> None:
        """Every allocator's and pool's invariants, and that allocators match their pools."""
        self.kv.check_integrity()
        self.token_allocator.check_integrity()
        if self.token_allocator.num_token_slots != self.kv.full_kv_pool.num_token_slots:
            raise IntegrityError("token allocator and full KV pool disagree on token slots")
        if self.draft_kv_pool is not None:
            self.draft_kv_pool.check_integrity()
            if self.draft_kv_pool.num_token_slots != self.kv.full_kv_pool.num_token_slots:
                raise IntegrityError("draft pool and full KV pool disagree on token slots")
        mamba = self.kv.mamba_pool
        if (self.state_allocator is None) != (mamba is None):
            raise IntegrityError("a state allocator needs a state pool and vice versa")
        if self.state_allocator is not None and mamba is not None:
            self.state_allocator.check_integrity()
            if self.state_allocator.capacity + 1 != mamba.num_slots:
                raise IntegrityError("state allocator capacity + NULL_SLOT != state pool slots")


def resolve_device(device: torch.device | str) -> torch.device:
    """A torch device, with a clear error when CUDA is asked for and absent."""
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda: no CUDA device is available (use --device cpu)")
    if dev.type not in ("cpu", "cuda", "meta"):
        raise ValueError(f"--device {device}: expected cpu, cuda or meta")
    return dev


def _token_pool(lay: CacheLayout, has_indexer: tuple[bool, ...], slots: int,
                tail: TailSpec | None, device: torch.device, draft: bool = False) -> FullPool:
    spec = lay.kv_row
    match lay.model.attn:
        case AttnKind.GQA:
            assert isinstance(spec, GqaRowSpec)
            return GqaKVPool(spec=spec, num_layers=len(has_indexer), num_token_slots=slots,
                             device=device)
        case AttnKind.MLA:
            assert isinstance(spec, LatentRowSpec)
            return LatentKVPool(spec=spec, num_layers=len(has_indexer), num_token_slots=slots,
                                device=device)
        case AttnKind.DSA:
            assert isinstance(spec, LatentRowSpec) and lay.index_key is not None
            return DsaTokenPool(spec=spec, index_spec=lay.index_key, has_indexer=has_indexer,
                                num_token_slots=slots, tail=tail, device=device,
                                elide_shared=elides_shared_index_keys(lay) and not draft)


def build_pools(plan: SglangPlan, device: torch.device | str = "cpu",
                scale: ScaleDown | None = None) -> DevicePools:
    """Allocate one rank's device pools for `plan` (first re-planned by
    `kvledger.sglang.scaling.scale_plan` with `scale`, when given)."""
    dev = resolve_device(device)
    if scale is not None:
        plan = scale_plan(plan, scale)
    lay, cap = plan.layout, plan.capacity
    model, dep = lay.model, lay.deployment
    slots = cap.max_total_tokens + lay.page_tokens  # T usable + the NULL_PAGE's P rows
    full = _token_pool(lay, tuple(layer.has_indexer for layer in model.full_layers), slots,
                       lay.tail(cap.max_running_requests), dev)
    draft = None
    if plan.ledgers.draft_token is not None:
        # Draft layers each own an indexer (kvledger.sglang.ledger.draft_token_ledger); no tail.
        layers = allocated_draft_layers(model, dep)
        draft = _token_pool(lay, (True,) * layers, slots, None, dev, draft=True)
    mamba, state_allocator = None, None
    if lay.state is not None:
        ssm = dep.mamba_ssm_dtype
        assert ssm is not None  # resolved by kvledger.sglang.resolve
        mamba = MambaPool(spec=lay.state, num_layers=model.num_linear_layers,
                          num_slots=cap.state_slots + 1, conv_dtype=CONV_DTYPE,
                          temporal_dtype=STATE_DTYPES[ssm], device=dev)
        state_allocator = StateSlotAllocator(num_slots=cap.state_slots)
    context = lay.context_tokens + REQ_TO_TOKEN_EXTRA_TOKENS + dep.speculative_num_draft_tokens
    rows = ReqToTokenPool(num_rows=cap.max_running_requests, max_context_tokens=context, device=dev)
    kv = HybridLinearKVPool(
        full_kv_pool=full, mamba_pool=mamba, req_to_token_pool=rows,
        full_layer_ids=[layer.index for layer in model.full_layers],
        linear_layer_ids=[layer.index for layer in model.linear_layers] if mamba else [],
        num_layers=model.num_layers,
    )
    return DevicePools(
        plan=plan, device=dev, kv=kv,
        token_allocator=PagedTokenAllocator(num_pages=cap.max_total_tokens // lay.page_tokens,
                                            page_tokens=lay.page_tokens),
        state_allocator=state_allocator, draft_kv_pool=draft,
    )
