"""Host-DRAM tier (HiCache) sizing: the host ledgers of one rank, in two views.

The *article's view* is what SGLang 0.5.21 builds for GLM-5.3-Flash: a host KV pool whose row
is `kv_lora_rank + qk_rope_head_dim` elements of the store dtype (512 B for a 528 B scaled-fp8
device row: `build_kv_host_pool` passes no `override_kv_cache_dim`), a MAMBA pool, and no
host copy of the index keys. *Ours* (kvledger, and SGLang from 0.5.22 on) copies the device
row byte for byte and adds an INDEXER side pool whose host slots are the KV pool's.

Sizing, mirroring SGLang's host pools (mem_cache/pool_host/base.py `HostKVCache.__init__`,
pool_host/mamba.py `MambaPoolHost.__init__`):
1. `--hicache-ratio r` (default 2.0, ServerArgs.hicache_ratio): each pool is r × its device
   size: `int(T·r)` tokens and `int(K·r)` state slots.
2. `--hicache-size G` (GB, 1e9 B): G is split between the token side and the state side in
   proportion to their device pool bytes (`_split_hicache_size` in later releases); each side
   then holds `share // bytes_per_unit` units.
3. Both round like SGLang: `page_num = units // page + 1` (one page more even when aligned);
   state slots have page size 1. The INDEXER pool has the KV pool's token count (derived
   host indices: `indices_from_pool=KV`).

kvledger's what-if, never the default: `--hicache-state-share F` keeps the budget either
flag gives and splits it anew, F to state slots (`kvledger.sglang.hicache_share`).

Our choice beyond SGLang, size mode only: a floor on host state slots. Host KV is useful only
below a node whose state is cached (a match must end at a state), so each state slot must be
able to pair with at most one full context of host KV:
`slots ≥ ceil(G / (host_bytes_per_token · context + slot_bytes))`, the bytes coming out of the
KV share. With the proportional split this binds only for models with small states or tiny
device state pools.

Worked example (SPEC §5 plan: T = 7,780,672, K = 343; ratio 2):

>>> from kvledger.sglang.plan import make_plan
>>> from kvledger.sglang.deploy import Deployment, KVDtype
>>> p = make_plan(deployment=Deployment(kv_cache_dtype=KVDtype.FP8_E4M3,
...                                     enable_hierarchical_cache=True))
>>> art, ours = p.host.views
>>> art.host_tokens, art.host_state_slots, art.per_token.total_bytes, ours.per_token.total_bytes
(15561408, 687, 5632, 7260)
>>> [c.value for c in ours.coverage.values()]
['host copy', 'host copy', 'host copy', 'no host copy (per-request buffer, not in the tree)']
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from math import ceil, inf

from kvledger.core.units import GB, fmt_bytes
from kvledger.sglang.hicache_share import FLAG as SHARE_FLAG
from kvledger.sglang.hicache_share import StateShare
from kvledger.sglang.ledger import Ledger, LedgerRow, state_ledger
from kvledger.sglang.resolve import CacheLayout
from kvledger.sglang.rules import RULES, RuleSet
from kvledger.sglang.specs import GqaRowSpec, LatentRowSpec, RowLayout

DEFAULT_HICACHE_RATIO = 2.0  # SGLang ServerArgs.hicache_ratio


class HostObject(Enum):
    """What a tree node's prefix has on device, and may have on host."""

    KV = "latent KV"
    INDEX_KEYS = "index keys"
    STATE = "linear-attention state"
    COMPRESS_TAIL = "compress tail"

    def label(self, kv_row: object) -> str:
        """The object as this model keeps it: GQA models hold K+V rows, not a latent."""
        if self is HostObject.KV and isinstance(kv_row, GqaRowSpec):
            return "GQA K+V"
        return self.value


class CopyStatus(Enum):
    COPIED = "host copy"
    ABSENT = "not backed up (yet)"  # per node: the object could be copied but is not
    TRUNCATED = "host row narrower than the device row: loadback corrupts it"
    MISSING = "no host copy: stale after loadback"
    NOT_IN_TREE = "no host copy (per-request buffer, not in the tree)"


class SizingMode(Enum):
    RATIO = "--hicache-ratio"
    SIZE = "--hicache-size"


@dataclass(frozen=True, slots=True, kw_only=True)
class HostRules:
    """What a host tier copies; built from a RuleSet so the article's defects stay declarative."""

    name: str
    row_matches_device: bool  # False: the host row drops the fp8 scales (512 vs 528)
    indexer_pool: bool  # False: index keys have no host copy

    @classmethod
    def from_rules(cls, rules: RuleSet, name: str | None = None) -> HostRules:
        return cls(name=name or rules.name, row_matches_device=rules.host_row_matches_device,
                   indexer_pool=rules.host_indexer_pool)

    def host_row_bytes(self, kv_row: LatentRowSpec | GqaRowSpec) -> int:
        """Bytes of one host KV row per token per full layer."""
        match kv_row:
            case LatentRowSpec() if not self.row_matches_device:
                itemsize = 2 if kv_row.layout is RowLayout.BF16 else 1  # the store dtype
                return (kv_row.kv_lora_rank + kv_row.qk_rope_head_dim) * itemsize
            case _:
                return kv_row.row_bytes

    def status(self, obj: HostObject, lay: CacheLayout) -> CopyStatus | None:
        """How `obj` is covered on host; None when the model has no such object."""
        match obj:
            case HostObject.KV:
                short = self.host_row_bytes(lay.kv_row) < lay.kv_row.row_bytes
                return CopyStatus.TRUNCATED if short else CopyStatus.COPIED
            case HostObject.INDEX_KEYS:
                if lay.index_key is None:
                    return None
                return CopyStatus.COPIED if self.indexer_pool else CopyStatus.MISSING
            case HostObject.STATE:
                return None if lay.state is None else CopyStatus.COPIED
            case HostObject.COMPRESS_TAIL:
                return None if lay.tail(1) is None else CopyStatus.NOT_IN_TREE


ARTICLE_HOST = HostRules.from_rules(RULES["sglang-0.5.21"], name="article (sglang-0.5.21)")
OUR_HOST = HostRules(name="kvledger", row_matches_device=True, indexer_pool=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class HostLedger:
    """One view's host pools: bytes per token, pool sizes and what they cover."""

    rules: HostRules
    per_token: Ledger  # host bytes per cached token
    pools: Ledger  # per rank: KV, INDEXER, MAMBA host pools
    host_tokens: int
    host_state_slots: int
    coverage: dict[HostObject, CopyStatus]


@dataclass(frozen=True, slots=True, kw_only=True)
class HostPlan:
    mode: SizingMode
    ratio: float | None
    size_bytes: int | None
    views: tuple[HostLedger, HostLedger]  # (article's, ours)
    notes: tuple[str, ...]
    state_share: float | None = None  # --hicache-state-share (kvledger's what-if), if given


def host_token_ledger(lay: CacheLayout, rules: HostRules) -> Ledger:
    """Host bytes per token over all full layers (KV, plus index keys when copied)."""
    row = rules.host_row_bytes(lay.kv_row)
    rows = [LedgerRow(component="host KV row", count=lay.model.num_full_layers, unit_bytes=row,
                      detail=f"device row {lay.kv_row.row_bytes} B")]
    key = lay.index_key
    if key is not None and rules.indexer_pool and lay.model.num_indexer_layers:
        rows.append(LedgerRow(component="host index key", count=lay.model.num_indexer_layers,
                              unit_bytes=key.reserved_bytes,
                              detail=f"page of {key.page_tokens} tokens = {key.page_bytes} B"))
    return Ledger(name=f"host per token ({rules.name})", per="token", rows=tuple(rows))


def _round_tokens(tokens: int, page: int) -> int:
    return (tokens // page + 1) * page  # SGLang: page_num = size // page_size + 1


def _view(lay: CacheLayout, rules: HostRules, raw_tokens: int, raw_slots: int) -> HostLedger:
    per_token = host_token_ledger(lay, rules)
    tokens = _round_tokens(raw_tokens, lay.page_tokens)
    slots = raw_slots + 1 if lay.state is not None else 0
    rows = [LedgerRow(component="host KV pool", count=tokens, unit_bytes=per_token.rows[0].total_bytes,
                      detail=f"{tokens // lay.page_tokens:,} pages × {lay.page_tokens} tokens")]
    if len(per_token.rows) > 1:
        rows.append(LedgerRow(component="host INDEXER pool", count=tokens,
                              unit_bytes=per_token.rows[1].total_bytes,
                              detail="host slots derived from the KV pool's"))
    if slots:
        rows.append(LedgerRow(component="host MAMBA pool", count=slots,
                              unit_bytes=state_ledger(lay).total_bytes,
                              detail="page size 1: one host slot = one whole state slot"))
    coverage = {obj: status for obj in HostObject if (status := rules.status(obj, lay))}
    return HostLedger(rules=rules, per_token=per_token,
                      pools=Ledger(name=f"host pools ({rules.name})", per="rank", rows=tuple(rows)),
                      host_tokens=tokens, host_state_slots=slots, coverage=coverage)


def _split(lay: CacheLayout, rules: HostRules, total: int, token_pool_bytes: int,
           state_pool_bytes: int) -> tuple[int, int]:
    token_bytes = host_token_ledger(lay, rules).total_bytes
    slot_bytes = state_ledger(lay).total_bytes
    if not slot_bytes:
        return total // token_bytes, 0
    state_share = total * state_pool_bytes / (token_pool_bytes + state_pool_bytes)
    slots = int(state_share // slot_bytes)
    floor_slots = ceil(total / (token_bytes * lay.context_tokens + slot_bytes))
    slots = max(slots, floor_slots)
    kv_share = total - slots * slot_bytes
    if kv_share < 0:
        raise ValueError(
            f"--hicache-size {total / GB:g}: cannot hold {slots} host state slot(s) of "
            f"{fmt_bytes(slot_bytes)}; expected at least {ceil(slot_bytes / GB * 100) / 100:g} GB"
        )
    return int(kv_share // token_bytes), slots


def plan_host(lay: CacheLayout, *, device_tokens: int, device_state_slots: int,
              device_token_pool_bytes: int, device_state_pool_bytes: int,
              state_share: float | None = None) -> HostPlan:
    """Host pools per rank for the deployment's --hicache-ratio / --hicache-size, split anew
    by `state_share` (--hicache-state-share) when given.

    `device_tokens` and `device_state_slots` are the usable T and K; the pool bytes include
    padding (they only weigh the split of --hicache-size).
    """
    dep = lay.deployment
    notes: list[str] = []
    share = None if state_share is None else StateShare(state_share)
    if share is not None and lay.state is None:
        raise ValueError(f"{SHARE_FLAG} {state_share!r}: {lay.model.name} has no "
                         "linear-attention state; its whole host budget is KV")
    views: list[HostLedger] = []
    ratio = dep.hicache_ratio or DEFAULT_HICACHE_RATIO
    if dep.hicache_size_gb is None and device_tokens * ratio >= inf:
        raise ValueError(f"--hicache-ratio {ratio:g}: {device_tokens:,} device tokens × "
                         f"{ratio:g} overflows; expected a host pool of a finite size")
    # The first view is the release --rules names (the article's by default), not always the
    # article's: its column in the tables is labelled with that release.
    for rules in (HostRules.from_rules(lay.rules), OUR_HOST):
        if dep.hicache_size_gb is not None and share is None:
            total = int(dep.hicache_size_gb * GB)
            raw_tokens, raw_slots = _split(lay, rules, total, device_token_pool_bytes,
                                           device_state_pool_bytes)
        else:
            raw_tokens, raw_slots = int(device_tokens * ratio), int(device_state_slots * ratio)
        if share is not None:
            raw_tokens, raw_slots = _share(lay, rules, share, raw_tokens, raw_slots, notes)
        view = _view(lay, rules, raw_tokens, raw_slots)
        if view.host_tokens <= device_tokens:
            notes.append(f"{rules.name}: host KV pool ({view.host_tokens:,} tokens) is not larger "
                         f"than the device pool ({device_tokens:,}); SGLang warns the same")
        views.append(view)
    if dep.hicache_size_gb is not None:
        return HostPlan(mode=SizingMode.SIZE, ratio=None, size_bytes=int(dep.hicache_size_gb * GB),
                        views=(views[0], views[1]), notes=tuple(notes), state_share=state_share)
    return HostPlan(mode=SizingMode.RATIO, ratio=ratio, size_bytes=None,
                    views=(views[0], views[1]), notes=tuple(notes), state_share=state_share)


def _share(lay: CacheLayout, rules: HostRules, share: StateShare, raw_tokens: int,
           raw_slots: int, notes: list[str]) -> tuple[int, int]:
    """The budget of the view's SGLang sizing (--hicache-size G, or the ratio's two pools)
    split anew by --hicache-state-share."""
    token_bytes = host_token_ledger(lay, rules).total_bytes
    slot_bytes = state_ledger(lay).total_bytes
    dep = lay.deployment
    if dep.hicache_size_gb is not None:
        budget = int(dep.hicache_size_gb * GB)
    else:
        budget = share.ratio_budget(raw_tokens=raw_tokens, raw_slots=raw_slots,
                                    token_bytes=token_bytes, slot_bytes=slot_bytes)
    tokens, slots = share.split(budget, token_bytes=token_bytes, slot_bytes=slot_bytes,
                                page_tokens=lay.page_tokens)
    notes.append(f"{rules.name}: {share.note(budget, slots, tokens)}")
    return tokens, slots
