"""Rows of an SGLang reconciliation for the pools a scheduler logs: the state pool (`Mamba
Cache is allocated`), the token pool (`KV Cache is allocated`), the KV dtype.

A pool's logged size is checked against the layout at the *logged* count (SGLang's token pools
allocate `size + page_size` rows, mem_cache/memory_pool.py; MambaPool `size + 1` slots, slot 0
padding), and the count against the plan's when memory is known (`caps`: the capacity at
points across the logged free-memory interval, `span_of`).

The state count a server logs is the slots its MambaPool was built with: the budget's K on an
aggregated server or a prefill node, the decode request pool's `effective_mamba_size` on a
decode node (`HybridMambaDecodeReqToTokenPool`, disaggregation/decode.py: max(K, (N + extra)
· (1 + track slots)), `kvledger.sglang.rolepools`), so a decode log is checked against that.

On a pipeline stage the layout is the stage's (its own full and linear layers,
`kvledger.sglang.stages`), `label` names the stage (`PP1: `), and the counts are the
pipeline's (T the MIN over stages; K charged at the largest stage's share).
"""

from __future__ import annotations

from dataclasses import replace

from kvledger.core.units import GiB
from kvledger.logs.lines import LogScan
from kvledger.logs.reconcile import Row, Status
from kvledger.sglang.capacity import CapacityPlan
from kvledger.sglang.choices import KVDtype
from kvledger.sglang.ledger import draft_token_ledger, token_ledger
from kvledger.sglang.resolve import CacheLayout

Caps = tuple[CapacityPlan, ...]  # the capacity at points across the logged memory's interval


def span_of(caps: Caps | None, value) -> tuple[int, int] | None:
    """(smallest, largest) of `value(cap)` over the capacities; None without them."""
    if not caps:
        return None
    values = [value(cap) for cap in caps]
    return min(values), max(values)


def token_bytes(lay: CacheLayout) -> int:
    """Bytes per token of the token pool (capacity.plan_capacity's C_token, draft included)."""
    draft = draft_token_ledger(lay)
    return token_ledger(lay).total_bytes + (draft.total_bytes if draft else 0)


def int_row(line_no: int, quantity: str, logged: int, lo: int, hi: int, why: str) -> Row:
    ok = lo <= logged <= hi
    shown = f"{lo:,}" if lo == hi else f"{lo:,} … {hi:,}"
    return Row(line_no=line_no, quantity=quantity, logged=f"{logged:,}", kvledger=shown,
               status=Status.EQUAL if ok else Status.DIFFERS, reason="" if ok else why)


def gb_row(line_no: int, quantity: str, logged: str, lo_bytes: int, hi_bytes: int) -> Row:
    lo, hi = f"{lo_bytes / GiB:.2f}", f"{hi_bytes / GiB:.2f}"
    ok = float(lo) <= float(logged) <= float(hi)
    return Row(line_no=line_no, quantity=quantity, logged=logged,
               kvledger=lo if lo == hi else f"{lo} … {hi}",
               status=Status.EQUAL if ok else Status.DIFFERS,
               reason="" if ok else "pool bytes differ")


# SGLang's torch dtype names for kvledger's KV dtypes (model_runner.py sets kv_cache_dtype
# to torch.bfloat16 for auto on bf16 models, torch.float8_e4m3fn for fp8_e4m3)
TORCH_KV = {KVDtype.BF16: "bfloat16", KVDtype.FP8_E4M3: "float8_e4m3fn"}


def count_row(line_no: int, quantity: str, logged: int, span: tuple[int, int] | None,
              explain_bytes: int, why: str, unknown: str = "") -> Row:
    """A logged count: against the plan's when memory is known, else not derivable
    (`unknown` says why), with the pool memory that explains it."""
    need = f"{explain_bytes / GiB:.2f} GiB of pool holds it"
    if span is None:
        return Row(line_no=line_no, quantity=quantity, logged=f"{logged:,}", kvledger="—",
                   status=Status.INFO, reason=f"not derivable: {unknown}; {need}")
    row = int_row(line_no, quantity, logged, span[0], span[1], why)
    return row if row.status is Status.EQUAL else replace(row, reason=f"{why}; {need}")


def logged_state_slots(cap: CapacityPlan) -> int:
    """The slots a server's MambaPool logs: K, or a decode node's allocation (module doc)."""
    role = cap.role
    if role is not None and role.allocated_state_slots:
        return role.allocated_state_slots - 1  # MambaPool adds the padding slot itself
    return cap.state_slots


def _state_rows(fact, lay: CacheLayout, caps: Caps | None, unknown: str, label: str
                ) -> list[Row]:
    slots = fact.int(0)
    layers = lay.model.num_linear_layers
    conv, ssm = (lay.state.conv_bytes, lay.state.temporal_bytes) if lay.state else (0, 0)
    span = span_of(caps, logged_state_slots)
    decode = bool(caps and caps[0].role and caps[0].role.allocated_state_slots
                  and lay.deployment.disaggregation_mode.is_decode)
    quantity = ("max_mamba_cache_size (decode request pool's slots)" if decode
                else "max_mamba_cache_size (state slots)")
    rows = [count_row(fact.line_no, label + quantity, slots, span,
                      (slots + 1) * (conv + ssm) * layers, "state pool sizing differs", unknown)]
    for i, name, unit in ((1, "conv_state size (GB)", conv), (2, "ssm_state size (GB)", ssm)):
        at = (slots + 1) * unit * layers
        rows.append(gb_row(fact.line_no, f"{label}{name} at {slots:,} slots", fact.groups[i],
                           at, at))
    return rows


def pool_rows(scan: LogScan, lay: CacheLayout, caps: Caps | None, unknown: str,
              label: str = "") -> list[Row]:
    """Layout at the logged counts, and the counts against the capacities (module doc)."""
    rows: list[Row] = []
    if fact := scan.get("sglang_mamba"):
        rows += _state_rows(fact, lay, caps, unknown, label)
    if fact := scan.get("sglang_kv"):
        tokens = fact.int(0)
        pool = (tokens + lay.page_tokens) * token_bytes(lay)
        span = span_of(caps, lambda cap: cap.max_total_tokens)
        rows.append(count_row(fact.line_no, label + "#tokens (KV pool)", tokens, span, pool,
                              "token pool sizing differs", unknown))
        half = len(fact.groups) == 3  # K size and V size, each half of a GQA row
        labels = ((1, "K size (GB)"), (2, "V size (GB)")) if half else ((1, "KV size (GB)"),)
        for i, name in labels:
            at = pool // 2 if half else pool
            rows.append(gb_row(fact.line_no, label + name, fact.groups[i], at, at))
    if fact := scan.get("sglang_kv_draft"):
        # the draft model's layers are not in the target's config: shown, not checked
        per_token = round(float(fact.groups[1]) * GiB / (fact.int(0) + lay.page_tokens))
        rows.append(Row(line_no=fact.line_no, quantity=label + "draft model's token pool (GB)",
                        logged=", ".join(fact.groups[1:]), kvledger="—", status=Status.INFO,
                        reason=f"a second pool of {fact.int(0):,} tokens: the speculative "
                        f"draft's; about {per_token:,} B per token per K/V tensor, not checked"))
    if (fact := scan.get("sglang_kv_dtype")) and lay.deployment.kv_cache_dtype in TORCH_KV:
        want = TORCH_KV[lay.deployment.kv_cache_dtype]
        ok = fact.value == want
        rows.append(Row(line_no=fact.line_no, quantity=label + "KV cache dtype",
                        logged=fact.value, kvledger=want,
                        status=Status.EQUAL if ok else Status.DIFFERS,
                        reason="" if ok else "the KV dtype differs: pass --kv-cache-dtype "
                        "after --"))
    return rows
