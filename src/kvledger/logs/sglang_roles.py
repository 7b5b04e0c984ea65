"""The lines a prefill or decode server prints about its own pools, and what it built.

A decode server's request pool (`HybridMambaDecodeReqToTokenPool.__init__`,
disaggregation/decode.py, sglang 0.5.23) builds max(mamba_size, (size + pre_alloc_size) ·
slots_per_req) state slots, where mamba_size is the budget's K, size the request limit N,
pre_alloc_size the extra rows for requests in transfer and slots_per_req 1 + the tracking
slots; when K is the smaller it warns, naming all five:

    mamba_size (16) is less than decode side's max_slots_needed (48 = 48 reqs * 1 slots/req),
    raising effective_mamba_size to 48

Each is a row against kvledger's decode plan (`kvledger.sglang.rolepools`): K, N + extra,
1 + tracking slots, their product and the effective size. Beside the rows, the pools as
built against what the budget charged (the engine defect the plan reproduces) and the T a
budget charging them would give.

>>> from kvledger.logs.lines import scan_log
>>> fact = scan_log("mamba_size (16) is less than decode side's max_slots_needed "
...                 "(48 = 48 reqs * 1 slots/req), raising effective_mamba_size to 48\\n"
...                 ).get("sglang_decode_mamba")
>>> fact.groups
('16', '48', '48', '1', '48')
"""

from __future__ import annotations

from kvledger.core.units import GiB
from kvledger.logs.lines import LogScan
from kvledger.logs.reconcile import Row
from kvledger.logs.sglang_rows import Caps, int_row, span_of
from kvledger.sglang.capacity import CapacityPlan
from kvledger.sglang.plan import SglangPlan


def _rows_needed(cap: CapacityPlan) -> int:
    assert cap.role is not None
    return cap.role.allocated_request_rows - 1  # N + extra (DecodeReqToTokenPool adds one)


def _per_request(cap: CapacityPlan) -> int:
    lay = cap.layout
    return 1 + ((lay.held_slots_per_request - 1) if not lay.deployment.disable_radix_cache
                else 0)


def _effective(cap: CapacityPlan) -> int:
    assert cap.role is not None
    return cap.role.allocated_state_slots - 1


def role_rows(scan: LogScan, caps: Caps | None) -> list[Row]:
    """The decode request pool's warning, number by number (module doc)."""
    fact = scan.get("sglang_decode_mamba")
    if fact is None or not caps or caps[0].role is None:
        return []
    checks = (("decode pool: mamba_size (the budget's K)", lambda c: c.state_slots),
              ("decode pool: max_slots_needed", lambda c: _rows_needed(c) * _per_request(c)),
              ("decode pool: reqs (N + extra rows)", _rows_needed),
              ("decode pool: slots per request", _per_request),
              ("decode pool: effective_mamba_size", _effective))
    rows = []
    for i, (quantity, value) in enumerate(checks):
        lo, hi = span_of(caps, value)  # type: ignore[misc]
        rows.append(int_row(fact.line_no, quantity, fact.int(i), lo, hi,
                            "the decode request pool differs"))
    return rows


def role_derived(plan: SglangPlan) -> list[tuple[str, str]]:
    """A prefill or decode server's pools as built beside what its budget charged
    (kvledger.sglang.rolepools): the decode request pool's unbudgeted state slots."""
    role = plan.capacity.role
    if role is None or not role.differs:
        return []
    mode = plan.layout.deployment.disaggregation_mode.value
    out = []
    if role.allocated_state_slots != role.charged_state_slots:
        out.append((f"{mode} role: state slots charged / allocated",
                    f"{role.charged_state_slots:,} / {role.allocated_state_slots:,} "
                    f"({role.unbudgeted_state_bytes / GiB:.2f} GiB unbudgeted)"))
    if role.allocated_verify_rows != role.charged_verify_rows:
        out.append((f"{mode} role: verify rows charged / allocated",
                    f"{role.charged_verify_rows:,} / {role.allocated_verify_rows:,}"))
    out.append((f"{mode} role: T had the budget charged the pools as built",
                f"{role.corrected_tokens:,}"))
    return out
