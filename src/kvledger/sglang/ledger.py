"""The three ledgers (per token, per state slot, per request) and the per-rank side buffers.

Every ledger is a list of itemised rows — component, count, unit bytes, total — and its total
is the sum of its rows. Memo rows explain but are not summed (what is actually written, what a
request physically holds).

Worked example, GLM-5.3-Flash in the article's deployment (scaled fp8, fp32 temporal state,
extra_buffer + overlap, attn_tp 1):

>>> from kvledger.model.config import load_model
>>> from kvledger.sglang.deploy import Deployment, KVDtype
>>> from kvledger.sglang.resolve import resolve
>>> from kvledger.sglang.rules import RULES
>>> lay = resolve(load_model(), Deployment(kv_cache_dtype=KVDtype.FP8_E4M3), RULES["sglang-0.5.21"])
>>> token_ledger(lay).total_bytes, state_ledger(lay).total_bytes
(7260, 147619840)
>>> request_ledger(lay).total_bytes
738099200
>>> side_ledger(lay, max_running_requests=64).rows[0].total_bytes  # the compress tail
1486848
"""

from __future__ import annotations

from kvledger.core.ledger import Ledger, LedgerRow
from kvledger.sglang.deploy import DisaggMode
from kvledger.sglang.draftlayers import allocated_draft_layers, budgeted_draft_layers
from kvledger.sglang.resolve import CacheLayout
from kvledger.sglang.specs import GqaRowSpec, LatentRowSpec

REQ_TO_TOKEN_ITEMSIZE = 4  # int32 token-slot index
REQ_TO_TOKEN_EXTRA_TOKENS = 4  # SGLang: extra_max_context_len = 4 (+ draft tokens)


def _kv_row(lay: CacheLayout, layers: int, label: str) -> LedgerRow:
    spec = lay.kv_row
    match spec:
        case LatentRowSpec():
            detail = (
                f"{spec.kv_lora_rank} latent + {spec.qk_rope_head_dim} rope, "
                f"{spec.layout.value}"
            )
            name = f"{label} latent KV"
        case GqaRowSpec():
            detail = f"2 × {spec.kv_heads_per_rank} heads × {spec.head_dim} × {spec.itemsize} B"
            name = f"{label} K+V"
    return LedgerRow(component=name, count=layers, unit_bytes=spec.row_bytes, detail=detail)


def elides_shared_index_keys(lay: CacheLayout) -> bool:
    """Whether the target's shared-top-k layers get 0-row index-K buffers
    (`_should_elide_dsa_index_k`, mem_cache/kv_cache_configurator.py)."""
    dep = lay.deployment
    return lay.rules.elides_index_keys_with_pd_and_hicache or (
        dep.disaggregation_mode is DisaggMode.NULL and not dep.enable_hierarchical_cache)


def dcp_replication(lay: CacheLayout) -> int:
    """How many DCP ranks' tokens one physical row's replicated DSA buffers serve: dcp under
    `RuleSet.dsa_dcp_replicates_index_keys` (0.5.23: the index keys, and the draft layers'
    KV and index keys, replicated over the DCP group), else 1.

    DeepSeek-V3.2, fp8 (trtllm rows), tp 8, dcp 2, EAGLE, 0.5.23: 61 × 576 + 61 × 132 × 2
    + (576 + 132) × 2 = 52,656 B per token, SGLang's `_cell_size`."""
    dcp = lay.deployment.dcp_size
    return dcp if lay.index_key is not None and lay.rules.dsa_dcp_replicates_index_keys else 1


def _replicated(row: LedgerRow, times: int) -> LedgerRow:
    if times == 1:
        return row
    return LedgerRow(component=row.component, count=row.count, unit_bytes=row.unit_bytes * times,
                     detail=f"{row.detail}; × {times}, replicated over the DCP group")


def _index_rows(
    lay: CacheLayout, reserved_layers: int, written_layers: int, label: str
) -> tuple[LedgerRow, LedgerRow] | None:
    # Only layers that own an indexer hold index keys: GLM-5.2's "shared" layers reuse a
    # neighbour's top-k and get a 0-row index-K buffer, which the cell size leaves out
    # (pool_configurator.py `_compute_dsa_indexer_cell_size` counts the layers that
    # `dsa_layer_skips_topk` keeps, unless `_should_elide_dsa_index_k` is False: a draft
    # worker's pool, HiSparse, and in 0.5.21 a prefill/decode server or the host tier:
    # `RuleSet.elides_index_keys_with_pd_and_hicache`).
    key = lay.index_key
    if key is None or reserved_layers == 0:
        return None
    reserved = LedgerRow(
        component=f"{label} indexer key (reserved)",
        count=reserved_layers,
        unit_bytes=key.reserved_bytes,
        detail=f"{key.key_bytes} fp8 + {key.scale_bytes} scale B, page {key.page_tokens} tokens",
    )
    effective = LedgerRow(
        component=f"{label} indexer key (written)",
        count=written_layers,
        unit_bytes=key.written_bytes_per_token,
        detail=f"one {key.row_bytes} B key per {key.kpool} tokens",
    )
    return reserved, effective


def token_ledger(lay: CacheLayout) -> Ledger:
    """Bytes each cached token costs on one rank, over all full layers."""
    rows = [_kv_row(lay, lay.model.num_full_layers, "full-layer")]
    memo: list[LedgerRow] = []
    model = lay.model
    reserved = model.num_indexer_layers if elides_shared_index_keys(lay) else model.num_full_layers
    if index := _index_rows(lay, reserved, model.num_indexer_layers, "full-layer"):
        rows.append(_replicated(index[0], dcp_replication(lay)))
        memo.append(index[1])
    return Ledger(name="per token", per="token", rows=tuple(rows), memo=tuple(memo))


def draft_token_ledger(lay: CacheLayout, *, budgeted: bool = False) -> Ledger | None:
    """The draft layers' own KV, allocated for the same token slots when speculating
    (`budgeted`: the layers the token budget counts instead; kvledger.sglang.draftlayers)."""
    count = budgeted_draft_layers if budgeted else allocated_draft_layers
    layers = count(lay.model, lay.deployment)
    if layers == 0:
        return None
    times = dcp_replication(lay)
    rows = [_replicated(_kv_row(lay, layers, "draft-layer"), times)]
    if index := _index_rows(lay, layers, layers, "draft-layer"):
        rows.append(_replicated(index[0], times))
    return Ledger(name="per token (MTP draft)", per="token", rows=tuple(rows))


def state_ledger(lay: CacheLayout) -> Ledger:
    """Bytes one state slot costs on one rank, over all linear-attention layers."""
    spec = lay.state
    if spec is None:
        return Ledger(name="per state slot", per="state slot", rows=())
    layers = lay.model.num_linear_layers
    ssm = lay.deployment.mamba_ssm_dtype
    assert ssm is not None
    rows = (
        LedgerRow(component="conv state", count=layers, unit_bytes=spec.conv_bytes,
                  detail=f"{spec.conv_shape} bfloat16"),
        LedgerRow(component="temporal state", count=layers, unit_bytes=spec.temporal_bytes,
                  detail=f"{spec.temporal_shape} {ssm.value}"),
    )
    return Ledger(name="per state slot", per="state slot", rows=rows)


def request_ledger(lay: CacheLayout) -> Ledger:
    """What admitting one request reserves beyond its tokens (state slots), plus memos."""
    slot_bytes = state_ledger(lay).total_bytes
    dep = lay.deployment
    rows: list[LedgerRow] = []
    memo: list[LedgerRow] = []
    if lay.state is not None:
        rows.append(LedgerRow(
            component="state slots reserved", count=lay.slots_per_request, unit_bytes=slot_bytes,
            detail=f"planning ratio ({dep.mamba_strategy.value}, overlap "
                   f"{'on' if lay.overlap else 'off'})",
        ))
        memo.append(LedgerRow(
            component="state slots held", count=lay.held_slots_per_request, unit_bytes=slot_bytes,
            detail="1 working + checkpoint track slots; the rest is prefix-cache headroom",
        ))
    extra = REQ_TO_TOKEN_EXTRA_TOKENS + dep.speculative_num_draft_tokens
    memo.append(LedgerRow(
        component="req_to_token row", count=lay.context_tokens + extra,
        unit_bytes=REQ_TO_TOKEN_ITEMSIZE, detail=f"int32 × (context {lay.context_tokens:,} + {extra})",
    ))
    return Ledger(name="per request", per="request", rows=tuple(rows), memo=tuple(memo))


def side_ledger(lay: CacheLayout, max_running_requests: int) -> Ledger:
    """Per-rank buffers outside the token and state budgets (they come out of the slack)."""
    rows: list[LedgerRow] = []
    if tail := lay.tail(max_running_requests):
        rows.append(LedgerRow(
            component="compress tail (key + score)", count=lay.model.num_indexer_layers,
            unit_bytes=tail.bytes_per_layer,
            detail=f"2 × ({tail.rows}, {tail.width_tokens}, {tail.head_dim}) bfloat16",
        ))
    extra = REQ_TO_TOKEN_EXTRA_TOKENS + lay.deployment.speculative_num_draft_tokens
    # A decode server's DecodeReqToTokenPool adds the rows for requests in transfer
    # (disaggregation/decode.py: _alloc_size = size + pre_alloc_size + 1).
    dep = lay.deployment
    count = max_running_requests + 1 + (
        (dep.disaggregation_decode_extra_slots or 0) if dep.disaggregation_mode.is_decode else 0)
    rows.append(LedgerRow(
        component="req_to_token", count=count,
        unit_bytes=(lay.context_tokens + extra) * REQ_TO_TOKEN_ITEMSIZE,
        detail=f"({count}, {lay.context_tokens + extra:,}) int32",
    ))
    return Ledger(name="side buffers", per="rank", rows=tuple(rows))


def verify_ledger(lay: CacheLayout, verify_requests: int) -> Ledger | None:
    """The speculative verify scratch one rank allocates beside the state pool.

    MambaPool (mem_cache/memory_pool.py) keeps, for each of `verify_requests` + 1 rows (row 0
    pads), one SSM state and one conv window per draft token and per linear layer:
    `intermediate_ssm_state_cache` (layers, n + 1, D, *temporal) in the SSM dtype and
    `intermediate_conv_window_cache` (layers, n + 1, D, *conv) in the conv dtype. Its total is
    S_slot·(n + 1)·D, what `_handle_max_mamba_cache` takes from the budget.
    """
    spec, draft = lay.state, lay.deployment.speculative_num_draft_tokens
    if spec is None or not draft:
        return None
    layers, rows = lay.model.num_linear_layers, verify_requests + 1
    ssm = lay.deployment.mamba_ssm_dtype
    assert ssm is not None
    return Ledger(name="verify scratch (speculative)", per="rank", rows=(
        LedgerRow(component="intermediate SSM state cache", count=rows,
                  unit_bytes=layers * draft * spec.temporal_bytes,
                  detail=f"({layers}, {rows}, {draft}, "
                         f"{', '.join(map(str, spec.temporal_shape))}) {ssm.value}"),
        LedgerRow(component="intermediate conv window cache", count=rows,
                  unit_bytes=layers * draft * spec.conv_bytes,
                  detail=f"({layers}, {rows}, {draft}, "
                         f"{', '.join(map(str, spec.conv_shape))}) bfloat16"),
    ))
