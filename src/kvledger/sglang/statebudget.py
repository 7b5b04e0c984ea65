"""State pool size K and the speculative verify scratch, as SGLang takes them from the budget.

SGLang sizes the Mamba/linear-attention state pool before the token pool
(mem_cache/kv_cache_configurator.py, `KVCacheConfigurator._handle_max_mamba_cache`, called from
`_profile_available_bytes`). Three branches, tried in this order:

1. `--max-mamba-cache-size` set: K = max_mamba_cache_size // attn_dp.
2. radix cache off and `--max-running-requests` set: K = max_running_requests // attn_dp
   (the request limit sizes the pool; the memory ratio is not used).
3. otherwise the ratio: B = rest·r/(1+r) with r = --mamba-full-memory-ratio, and
   K = floor(B / S) − 1 without speculative decoding (slot 0 is the padding slot), or, with D
   draft tokens, solved jointly with the verify scratch:
   K = floor((B − S·(1 + D)) / (S·(1 + D/ratio))).

With speculative decoding the pool also holds, per verified request, one intermediate state
per draft token (MambaPool's `intermediate_ssm_state_cache` of shape
(layers, n + 1, D, *temporal) in the SSM dtype and `intermediate_conv_window_cache` of shape
(layers, n + 1, D, *conv) in the conv dtype), so S·(n + 1)·D bytes leave the budget before
the token pool is sized, where n = min(max_running_requests // attn_dp, K // ratio) in
branches 1 and 3, and n = K in branch 2. `ratio` is the planning ratio of state slots per
running request (`_calculate_mamba_ratio`: 1 with the radix cache off, else 3 + the
extra_buffer ping-pong slots). Speculative decoding needs --max-running-requests (SGLang sets
48 when it is unset; `kvledger.sglang.resolve` does the same).

Worked example (S = 1,000 B, r = 0.9, rest = 1,900,000 B, D = 4, ratio 5, 48 requests):
B = 900,000; K = floor((900,000 − 5,000) / (1,000 · 1.8)) = 497; n = min(48, 99) = 48;
scratch = 1,000 · 49 · 4 = 196,000 B.

>>> b = solve_state_budget(rest_bytes=1_900_000, slot_bytes=1_000, ratio=0.9, draft_tokens=4,
...                        slots_per_request=5, max_running_requests=48, attn_dp=1,
...                        max_mamba_cache_size=None, radix_off=False)
>>> b.state_slots, b.verify_requests, b.verify_bytes, b.source.value
(497, 48, 196000, 'memory ratio')

0.5.8 and 0.5.9 (model_runner_kv_cache_mixin.py `ModelRunnerKVCacheMixin.handle_max_mamba_cache`,
`StateBudgetRules` from their rule sets): the scratch S·n·D, n = --max-running-requests // attn_dp,
leaves the rest first; K = floor(B / S) with no slot held back, and the budget charges K·S
(MambaPool still allocates K + 1); 0.5.8 alone gives a radix-off pool without a limit 512
slots. The same example: rest 1,900,000 − 192,000 = 1,708,000; B = 809,052; K = 809.

>>> b = solve_state_budget(rest_bytes=1_900_000, slot_bytes=1_000, ratio=0.9, draft_tokens=4,
...                        slots_per_request=5, max_running_requests=48, attn_dp=1,
...                        max_mamba_cache_size=None, radix_off=False,
...                        release=StateBudgetRules(charges_padding_slot=False,
...                                                 scratch_solved_with_state=False))
>>> b.state_slots, b.charged_slots, b.verify_requests, b.verify_bytes
(809, 809, 48, 192000)
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class StateSource(Enum):
    """Which `_handle_max_mamba_cache` branch sized the state pool."""

    MAX_MAMBA_CACHE_SIZE = "--max-mamba-cache-size"
    RUNNING_REQUESTS = "--max-running-requests (radix cache off)"
    RADIX_OFF_DEFAULT = "the release's default (radix cache off, no limit)"
    RATIO = "memory ratio"


@dataclass(frozen=True, slots=True, kw_only=True)
class StateBudgetRules:
    """The release's state-budget rules (`kvledger.sglang.rules.RuleSet`'s fields of the same
    meaning: state_budget_charges_padding_slot, verify_scratch_solved_with_state,
    radix_off_default_state_slots)."""

    charges_padding_slot: bool = True  # K = floor(B/S) − 1, (K + 1)·S charged
    scratch_solved_with_state: bool = True  # the joint solve; else S·n·D first
    radix_off_default_slots: int | None = None  # radix off, no limit: this many, not the ratio


@dataclass(frozen=True, slots=True, kw_only=True)
class StateBudget:
    source: StateSource
    state_slots: int  # K, usable (the pool allocates K + 1 with the padding slot)
    charged_slots: int  # slots the token budget is charged for: K + 1, or K (0.5.8/0.5.9)
    verify_requests: int  # n: requests the verify scratch is sized for (0: not speculating)
    verify_bytes: int  # S·(n + 1)·D, taken from the budget before the token pool
    mamba_budget_bytes: float  # B = rest·r/(1+r) (branch 3 only; 0.0 otherwise)


def solve_state_budget(
    *, rest_bytes: int, slot_bytes: int, ratio: float, draft_tokens: int,
    slots_per_request: int, max_running_requests: int | None, attn_dp: int,
    max_mamba_cache_size: int | None, radix_off: bool,
    release: StateBudgetRules = StateBudgetRules(),
) -> StateBudget:
    """K and the verify scratch for one rank; the caller checks K ≥ 1."""
    if draft_tokens and max_running_requests is None:
        # SGLang asserts this in _handle_max_mamba_cache; server_args fills in 48 first.
        raise ValueError("speculative decoding needs --max-running-requests (SGLang sets 48)")
    requests_per_worker = (None if max_running_requests is None
                           else max(max_running_requests // attn_dp, 1))
    scratch_first = bool(draft_tokens) and not release.scratch_solved_with_state
    if scratch_first:
        assert requests_per_worker is not None
        rest_bytes -= slot_bytes * requests_per_worker * draft_tokens
    budget = 0.0
    if max_mamba_cache_size is not None:
        source = StateSource.MAX_MAMBA_CACHE_SIZE
        slots = max_mamba_cache_size // attn_dp
    elif radix_off and requests_per_worker is not None:
        source = StateSource.RUNNING_REQUESTS
        slots = requests_per_worker
    elif radix_off and release.radix_off_default_slots is not None:
        source = StateSource.RADIX_OFF_DEFAULT
        slots = release.radix_off_default_slots // attn_dp
    else:
        source = StateSource.RATIO
        budget = rest_bytes * ratio / (1 + ratio)
        if draft_tokens and not scratch_first:
            slots = int((budget - slot_bytes * (1 + draft_tokens))
                        // (slot_bytes * (1 + draft_tokens / slots_per_request)))
        else:
            slots = int(budget // slot_bytes) - (1 if release.charges_padding_slot else 0)
    verify_requests = 0
    if scratch_first:
        assert requests_per_worker is not None
        verify_requests = requests_per_worker
    elif draft_tokens:
        assert requests_per_worker is not None
        verify_requests = (slots if source is StateSource.RUNNING_REQUESTS
                           else min(requests_per_worker, slots // slots_per_request))
    scratch_requests = verify_requests if scratch_first else verify_requests + 1
    verify_bytes = (slot_bytes * scratch_requests * draft_tokens) if draft_tokens else 0
    charged = slots + 1 if release.charges_padding_slot else slots
    return StateBudget(source=source, state_slots=slots, charged_slots=charged,
                       verify_requests=verify_requests, verify_bytes=verify_bytes,
                       mamba_budget_bytes=budget)
