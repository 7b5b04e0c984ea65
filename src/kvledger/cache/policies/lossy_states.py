"""Lossy what-if (never the default, never in verify's bit-identical matrix): 8-bit checkpoints.

Running requests keep full-precision working and track slots (their kernels compute in the
SSM dtype); only the states the prefix cache keeps are stored as int8 or fp8 (e4m3) — one
byte per element plus one float32 scale per row of the last dimension (per d_v row of the
temporal state, per kept time step of the conv window). The cache's share of the state pool,
(K − N · held) full slots, then holds more checkpoints at the same memory. int8 and fp8 cost
the same bytes; they differ in the error (`kvledger.engine.lossy` measures it).

The simulated what-if (`lossy_plan`) gives the state pool the gained slots: at N running the
cache then holds exactly `cache_lossy_slots` checkpoints; with fewer running, the rows those
requests do not pin would hold slot_bytes / checkpoint_slot_bytes checkpoints each but hold
one, so the simulated hit is exact at full concurrency and a lower bound below it.

Per layer, a tensor of shape (…, w) with E elements costs E · 1 + (E / w) · 4 bytes.

Worked example (one layer, conv (3, 8) bf16, temporal (2, 4, 4) fp32): full 48 + 128 = 176 B;
8-bit (24 + 3·4) + (32 + 8·4) = 100 B (cached share 82 full slots → 144).

>>> from kvledger.sglang.specs import StateSpec
>>> spec = StateSpec(conv_shape=(3, 8), conv_itemsize=2, temporal_shape=(2, 4, 4),
...                  temporal_itemsize=4)
>>> checkpoint_bytes(spec, layers=1)
100
>>> e = LossyStates(state_slots=205, pinned_slots=123, slot_bytes=176, checkpoint_slot_bytes=100)
>>> e.cache_full_slots, e.cache_lossy_slots, e.gained_slots
(82, 144, 62)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum
from math import prod

from kvledger.sglang.plan import SglangPlan
from kvledger.sglang.specs import StateSpec

LABEL = "what-if (lossy, not bit-exact): 8-bit checkpoint states, float32 scale per row"
QUANT_ITEMSIZE = 1  # int8 or fp8_e4m3
SCALE_BYTES = 4  # one float32 scale per row of the last dimension


class LossyCheckpoints(Enum):
    """How cached checkpoints are stored in the what-if (`--lossy-checkpoints`)."""

    INT8 = "int8"  # symmetric, absmax / 127 per row
    FP8 = "fp8"  # float8 e4m3, absmax / 448 per row


def label(kind: LossyCheckpoints) -> str:
    """The what-if's label for `kind`, as tables and JSON print it."""
    return f"{LABEL} ({kind.value})"


def _quantized_bytes(shape: tuple[int, ...]) -> int:
    elements = prod(shape)
    return (elements * QUANT_ITEMSIZE  # the 8-bit values
            + elements // shape[-1] * SCALE_BYTES)  # one scale per row


def checkpoint_bytes(spec: StateSpec, *, layers: int) -> int:
    """One cached checkpoint's bytes over `layers` linear layers, stored 8-bit."""
    return layers * (_quantized_bytes(spec.conv_shape) + _quantized_bytes(spec.temporal_shape))


@dataclass(frozen=True, slots=True)
class LossyStates:
    state_slots: int  # K
    pinned_slots: int  # N · held: full-precision slots of running requests
    slot_bytes: int  # a full-precision slot
    checkpoint_slot_bytes: int  # an 8-bit cached checkpoint

    def __post_init__(self) -> None:
        if not 0 < self.checkpoint_slot_bytes <= self.slot_bytes:
            raise ValueError(f"checkpoint of {self.checkpoint_slot_bytes} B: expected 1 to the "
                             f"full slot's {self.slot_bytes} B")

    @property
    def cache_full_slots(self) -> int:
        return max(0, self.state_slots - self.pinned_slots)

    @property
    def cache_lossy_slots(self) -> int:
        return self.cache_full_slots * self.slot_bytes // self.checkpoint_slot_bytes

    @property
    def gained_slots(self) -> int:
        return self.cache_lossy_slots - self.cache_full_slots


def lossy_states(plan: SglangPlan) -> LossyStates:
    """The 8-bit checkpoint arithmetic for `plan` at N running requests."""
    lay, cap = plan.layout, plan.capacity
    if lay.state is None:
        raise ValueError(f"{plan.model.source}: no linear-attention states to quantize")
    return LossyStates(state_slots=cap.state_slots,
                       pinned_slots=cap.max_running_requests * lay.held_slots_per_request,
                       slot_bytes=cap.slot_bytes,
                       checkpoint_slot_bytes=checkpoint_bytes(
                           lay.state, layers=plan.model.num_linear_layers))


def lossy_plan(plan: SglangPlan, lossy: LossyStates, kind: LossyCheckpoints) -> SglangPlan:
    """`plan` with the gained slots given to the state pool (the simulated what-if), its notes
    carrying the label. Requests still hold today's slots, so at N running the cache holds
    exactly `cache_lossy_slots`; fewer running, less than the what-if would (a lower bound)."""
    cap = replace(plan.capacity, state_slots=plan.capacity.state_slots + lossy.gained_slots)
    return replace(plan, capacity=cap, notes=(*plan.notes, label(kind)))
