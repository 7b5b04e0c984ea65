"""Allocated bytes next to the bytes the ledgers predict, pool by pool.

Allocated bytes are read off the tensors (`nbytes`); predicted bytes come from the plan's
ledger rows times the plan's counts, never from the pools' shapes:

    full KV, index keys, draft   token ledger row × (T + P) token slots
    conv, temporal state         state ledger row × (K + 1) state slots
    compress tail, req_to_token  side ledger row (already per rank)

>>> from kvledger.sglang.plan import make_plan
>>> from kvledger.pools.build import build_pools
>>> rows = account(build_pools(make_plan(kv_cache_dtype="fp8_e4m3"), "meta"))
>>> [(r.pool, r.allocated_bytes, r.matches) for r in rows[:2]]
[('full KV', 45190514688, True), ('full index keys', 11297628672, True)]
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from kvledger.core.ledger import Ledger, LedgerRow
from kvledger.pools.build import DevicePools
from kvledger.pools.dsa import DsaTokenPool
from kvledger.pools.errors import IntegrityError
from kvledger.pools.gqa import GqaKVPool
from kvledger.pools.hybrid import FullPool


@dataclass(frozen=True, slots=True, kw_only=True)
class PoolBytes:
    pool: str  # what was allocated
    tensors: str  # how many tensors of which shape and dtype
    allocated_bytes: int  # Σ nbytes of those tensors
    predicted_bytes: int  # ledger row × count
    derivation: str  # which ledger row times which count

    @property
    def matches(self) -> bool:
        return self.allocated_bytes == self.predicted_bytes


def _row(ledger: Ledger, suffix: str) -> LedgerRow:
    found = [row for row in ledger.rows if row.component.endswith(suffix)]
    if len(found) != 1:
        raise IntegrityError(f"ledger {ledger.name!r}: {len(found)} rows ending in {suffix!r}")
    return found[0]


def _describe(tensors: list[torch.Tensor]) -> str:
    first = tensors[0]
    dtype = str(first.dtype).removeprefix("torch.")
    return f"{len(tensors)} × {tuple(first.shape)} {dtype}"


def _per_token(name: str, tensors: list[torch.Tensor], row: LedgerRow, slots: int) -> PoolBytes:
    return PoolBytes(
        pool=name, tensors=_describe(tensors), allocated_bytes=sum(t.nbytes for t in tensors),
        predicted_bytes=row.total_bytes * slots,
        derivation=f"token ledger '{row.component}' {row.total_bytes:,} B × (T + P) {slots:,}",
    )


def _token_pool_rows(label: str, pool: FullPool, ledger: Ledger, slots: int) -> list[PoolBytes]:
    kv_tensors = ([*pool.k_buffer, *pool.v_buffer] if isinstance(pool, GqaKVPool)
                  else list(pool.kv_buffer))
    kv_suffix = "K+V" if isinstance(pool, GqaKVPool) else "latent KV"
    rows = [_per_token(f"{label}KV", kv_tensors, _row(ledger, kv_suffix), slots)]
    if isinstance(pool, DsaTokenPool):
        rows.append(_per_token(f"{label}index keys", pool.index_keys.buffers,
                               _row(ledger, "indexer key (reserved)"), slots))
    return rows


def account(pools: DevicePools) -> tuple[PoolBytes, ...]:
    """One row per allocated pool: allocated bytes, ledger-predicted bytes, derivation."""
    plan, kv = pools.plan, pools.kv
    slots = plan.capacity.max_total_tokens + plan.layout.page_tokens
    rows = _token_pool_rows("full ", kv.full_kv_pool, plan.ledgers.token, slots)
    if pools.draft_kv_pool is not None:
        assert plan.ledgers.draft_token is not None
        rows += _token_pool_rows("draft ", pools.draft_kv_pool, plan.ledgers.draft_token, slots)
    if kv.mamba_pool is not None:
        num_slots = plan.capacity.state_slots + 1
        for name, tensor in (("conv", kv.mamba_pool.conv), ("temporal", kv.mamba_pool.temporal)):
            row = _row(plan.ledgers.state, f"{name} state")
            rows.append(PoolBytes(
                pool=f"{name} state", tensors=_describe([tensor]), allocated_bytes=tensor.nbytes,
                predicted_bytes=row.total_bytes * num_slots,
                derivation=f"state ledger '{row.component}' {row.total_bytes:,} B × (K + 1) "
                           f"{num_slots:,}",
            ))
    side = plan.capacity.side
    tail = kv.full_kv_pool.tail if isinstance(kv.full_kv_pool, DsaTokenPool) else None
    if tail is not None:
        row = _row(side, "compress tail (key + score)")
        rows.append(PoolBytes(
            pool="compress tail", tensors=_describe([*tail.key, *tail.score]),
            allocated_bytes=tail.allocated_bytes, predicted_bytes=row.total_bytes,
            derivation=f"side ledger '{row.component}' {row.count} layers × {row.unit_bytes:,} B",
        ))
    row = _row(side, "req_to_token")
    table = kv.req_to_token_pool.req_to_token
    rows.append(PoolBytes(
        pool="req_to_token", tensors=_describe([table]), allocated_bytes=table.nbytes,
        predicted_bytes=row.total_bytes,
        derivation=f"side ledger '{row.component}' (N + 1) {row.count} × {row.unit_bytes:,} B",
    ))
    return tuple(rows)
