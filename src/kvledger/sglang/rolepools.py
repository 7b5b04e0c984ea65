"""What a prefill or decode server's pools allocate, beside what the budget charged for them.

The budget (`kvledger.sglang.capacity`) charges K + 1 state slots, n + 1 verify rows and
N + 1 request rows. A disaggregated server builds different pools
(mem_cache/kv_cache_configurator.py `_build_req_to_token_pool`, sglang 0.5.21 and 0.5.23):

- Decode (disaggregation/decode.py `HybridMambaDecodeReqToTokenPool.__init__`): request rows
  N + extra + 1 (`DecodeReqToTokenPool`: `_alloc_size = size + pre_alloc_size + 1`), state
  slots max(K, (N + extra)·(1 + track slots)) + 1 (`effective_mamba_size`; track slots are the
  ping-pong buffer, 0 without extra_buffer, which the forced radix-off turns off) and verify
  rows N + extra + 1 (`mamba_spec_state_size = size + pre_alloc_size`). Nothing re-charges
  the budget for the difference: it comes out of the (1 − mem_fraction_static) slack. That
  is the engine defect reproduced here; `corrected_tokens` is T had the budget charged the
  real allocation.
- Prefill with speculative decoding: `_build_hybrid_req_pool` passes no draft tokens, so no
  verify rows are allocated. 0.5.21 charged them anyway (over-reserved, never allocated);
  0.5.23 does not charge them (`RuleSet.prefill_reserves_verify_scratch`).

Example: a decode server with --max-running-requests 32, radix off, one rank: K = 32, N = 32,
extra = 64 → 96 + 1 state slots allocated against 32 + 1 charged: 64 slots unbudgeted.

>>> p = RolePools(charged_state_slots=33, allocated_state_slots=97, slot_bytes=10,
...               charged_verify_rows=0, allocated_verify_rows=0, verify_row_bytes=0,
...               charged_request_rows=33, allocated_request_rows=97, request_row_bytes=4,
...               corrected_tokens=100)
>>> p.unbudgeted_state_bytes, p.unbudgeted_request_bytes, p.unbudgeted_bytes
(640, 256, 640)
"""

from __future__ import annotations

from dataclasses import dataclass

from kvledger.core.units import align_down
from kvledger.sglang.ledger import REQ_TO_TOKEN_EXTRA_TOKENS, REQ_TO_TOKEN_ITEMSIZE
from kvledger.sglang.resolve import CacheLayout


@dataclass(frozen=True, slots=True, kw_only=True)
class RolePools:
    charged_state_slots: int  # K + 1 (0 for a model without state)
    allocated_state_slots: int
    slot_bytes: int
    charged_verify_rows: int  # n + 1 (0 without speculative decoding)
    allocated_verify_rows: int
    verify_row_bytes: int  # S·D: one row of intermediate states for every draft token
    charged_request_rows: int  # N + 1 (req_to_token; the side ledger)
    allocated_request_rows: int
    request_row_bytes: int
    corrected_tokens: int  # T had the budget charged the pools as allocated (≤ 0: no room)

    @property
    def unbudgeted_state_bytes(self) -> int:
        return (self.allocated_state_slots - self.charged_state_slots) * self.slot_bytes

    @property
    def unbudgeted_verify_bytes(self) -> int:
        """Negative when the budget charged verify rows that are never allocated."""
        return (self.allocated_verify_rows - self.charged_verify_rows) * self.verify_row_bytes

    @property
    def unbudgeted_request_bytes(self) -> int:
        return (self.allocated_request_rows - self.charged_request_rows) * self.request_row_bytes

    @property
    def unbudgeted_bytes(self) -> int:
        """State and verify bytes allocated beyond the charge (request rows are side buffers,
        never budgeted on any server, so they are not counted here)."""
        return self.unbudgeted_state_bytes + self.unbudgeted_verify_bytes

    @property
    def differs(self) -> bool:
        return (self.allocated_state_slots, self.allocated_verify_rows,
                self.allocated_request_rows) != (self.charged_state_slots,
                                                 self.charged_verify_rows,
                                                 self.charged_request_rows)


def role_pools(lay: CacheLayout, *, rest_bytes: int, token_bytes: int, slot_bytes: int,
               state_slots: int, verify_requests: int, running: int) -> RolePools | None:
    """The role's allocation for one rank (None on an aggregated server)."""
    dep = lay.deployment
    mode = dep.disaggregation_mode
    if not (mode.is_decode or mode.is_prefill):
        return None
    draft = dep.speculative_num_draft_tokens
    hybrid = slot_bytes > 0
    charged_slots = state_slots + 1 if hybrid else 0
    charged_verify = verify_requests + 1 if hybrid and draft and verify_requests else 0
    row_bytes = (lay.context_tokens + REQ_TO_TOKEN_EXTRA_TOKENS + draft) * REQ_TO_TOKEN_ITEMSIZE
    rows = running + 1
    if mode.is_prefill:
        slots, verify = charged_slots, 0  # the prefill req pool never builds verify rows
    else:
        rows += dep.disaggregation_decode_extra_slots or 0
        track = (lay.held_slots_per_request - 1) if not dep.disable_radix_cache else 0
        needed = (rows - 1) * (1 + track)
        slots = max(state_slots, needed) + 1 if hybrid else 0
        verify = rows if hybrid and draft else 0
    verify_row_bytes = slot_bytes * draft
    pool_bytes = slots * slot_bytes + verify * verify_row_bytes
    corrected = align_down(max(rest_bytes - pool_bytes, 0) // token_bytes, lay.page_tokens)
    if dep.max_total_tokens is not None:
        corrected = min(corrected, align_down(dep.max_total_tokens, lay.page_tokens))
    return RolePools(
        charged_state_slots=charged_slots, allocated_state_slots=slots, slot_bytes=slot_bytes,
        charged_verify_rows=charged_verify, allocated_verify_rows=verify,
        verify_row_bytes=verify_row_bytes, charged_request_rows=running + 1,
        allocated_request_rows=rows, request_row_bytes=row_bytes, corrected_tokens=corrected)
