"""Every candidate for N, the running requests per worker, as SGLang resolves them.

mem_cache/kv_cache_configurator.py, `KVCacheConfigurator.resolve_max_num_reqs` (both rule
sets): the configured `--max-running-requests // attn_dp` (at least 1 where the rule set
floors it; see `kvledger.sglang.resolve`), else the context heuristic clamp(T / context · 512, 2048,
4096); either capped at `token_capacity // 2`; on hybrids then at
`max_mamba_cache_size // _calculate_mamba_ratio()` (the layout's slots per request). 0.5.8 and
0.5.9 (model_runner.py `ModelRunner.initialize`) cap only the unset limit at T // 2.

>>> from kvledger.model.config import load_model
>>> from kvledger.sglang.deploy import Deployment
>>> from kvledger.sglang.resolve import resolve
>>> from kvledger.sglang.rules import RULES
>>> lay = resolve(load_model("llama-3.1-8b"), Deployment(max_running_requests=512),
...               RULES["sglang-0.5.21"])
>>> request_limits(lay, tokens=256, state_slots=None)[Limit.TOKENS]
128
"""

from __future__ import annotations

from enum import Enum

from kvledger.sglang.resolve import CacheLayout

CONTEXT_HEURISTIC_SCALE = 512  # SGLang: max_num_reqs = T / context_len · 512, clamped
CONTEXT_HEURISTIC_MIN = 2048
CONTEXT_HEURISTIC_MAX = 4096


class Limit(Enum):
    CONFIGURED = "--max-running-requests"
    CONTEXT_HEURISTIC = "SGLang default (T/context·512, clamped to 2048..4096)"
    TOKENS = "tokens (T // 2)"
    STATE = "state slots"

    @property
    def code(self) -> str:
        """The machine code JSON documents use (`state_slots`)."""
        return LIMIT_CODES[self]


LIMIT_CODES = {Limit.CONFIGURED: "max_running_requests", Limit.CONTEXT_HEURISTIC:
               "context_heuristic", Limit.TOKENS: "tokens", Limit.STATE: "state_slots"}


def request_limits(lay: CacheLayout, tokens: int, state_slots: int | None) -> dict[Limit, int]:
    """Every candidate for N (`KVCacheConfigurator.resolve_max_num_reqs`)."""
    dep = lay.deployment
    limits: dict[Limit, int] = {}
    if dep.max_running_requests is not None:
        limits[Limit.CONFIGURED] = max(dep.max_running_requests // dep.attn_dp_size, 1)
    else:
        # SGLang divides, scales, then truncates: int(T / context · 512), not T // context · 512
        heuristic = int(tokens / lay.context_tokens * CONTEXT_HEURISTIC_SCALE)
        limits[Limit.CONTEXT_HEURISTIC] = min(
            max(heuristic, CONTEXT_HEURISTIC_MIN), CONTEXT_HEURISTIC_MAX)
    if dep.max_running_requests is None or lay.rules.requests_capped_at_half_tokens_when_set:
        limits[Limit.TOKENS] = tokens // 2
    if state_slots is not None:
        limits[Limit.STATE] = state_slots // lay.slots_per_request
    return limits
