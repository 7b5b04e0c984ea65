"""Scale a plan down with SGLang's own capacity caps, on the planning side.

A laptop or CPU build of the pools (`kvledger.pools.build`) needs a smaller plan, not a
shrunken copy of a big one: `scale_plan` re-runs capacity (and the host tier's sizes) with
`--max-total-tokens`, `--max-mamba-cache-size` and `--max-running-requests` set, so the small
pools are a real plan whose ledgers are the original's. No torch here.

>>> from kvledger.sglang.plan import make_plan
>>> small = scale_plan(make_plan(kv_cache_dtype="fp8_e4m3"),
...                    ScaleDown(max_total_tokens=256, max_mamba_cache_size=5))
>>> cap = small.capacity
>>> cap.max_total_tokens, cap.state_slots, cap.max_running_requests
(256, 5, 1)
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kvledger.core.units import align_up
from kvledger.sglang.capacity import plan_capacity
from kvledger.sglang.hicache import plan_host
from kvledger.sglang.plan import SglangPlan

LAPTOP_TOKENS = 1024  # token slots per rank in a laptop build (rounded up to whole pages)
LAPTOP_REQUESTS = 4  # running requests per rank in a laptop build (fewer when state binds)


@dataclass(frozen=True, slots=True, kw_only=True)
class ScaleDown:
    """SGLang's capacity caps, applied on top of the plan's deployment; None keeps the plan's.

    Semantics are the flags': `max_total_tokens` per rank, `max_mamba_cache_size` and
    `max_running_requests` global (divided by attention DP).
    """

    max_total_tokens: int | None = None
    max_mamba_cache_size: int | None = None
    max_running_requests: int | None = None

    @classmethod
    def laptop(cls, plan: SglangPlan) -> ScaleDown:
        """1,024 tokens (whole pages), one request's state slots, ≤ 4 requests per rank.

        Each cap applies only where the plan is larger.

        Caps the user set in the deployment are kept as they are.
        """
        lay, cap = plan.layout, plan.capacity
        dep, dp = lay.deployment, lay.deployment.attn_dp_size
        slots = min(cap.state_slots, lay.slots_per_request) if lay.state is not None else None
        return cls(
            max_total_tokens=(
                None if dep.max_total_tokens is not None
                else min(cap.max_total_tokens, align_up(LAPTOP_TOKENS, lay.page_tokens))),
            max_mamba_cache_size=(None if dep.max_mamba_cache_size is not None or slots is None
                                  else slots * dp),
            max_running_requests=(None if dep.max_running_requests is not None
                                  else min(cap.max_running_requests, LAPTOP_REQUESTS) * dp),
        )


def scale_plan(plan: SglangPlan, scale: ScaleDown) -> SglangPlan:
    """The same plan re-run with SGLang's capacity caps (ledgers do not depend on them)."""
    caps = {name: getattr(scale, name) for name in
            ("max_total_tokens", "max_mamba_cache_size", "max_running_requests")}
    for name, value in caps.items():
        if value is not None and value < 1:
            raise ValueError(f"--{name.replace('_', '-')} {value}: expected a positive number")
    dep = replace(plan.layout.deployment,
                  **{name: value for name, value in caps.items() if value is not None})
    layout = replace(plan.layout, deployment=dep)
    capacity = plan_capacity(layout, plan.capacity.memory)
    host = None
    if plan.host is not None:
        host = plan_host(layout, device_tokens=capacity.max_total_tokens,
                         device_state_slots=capacity.state_slots,
                         device_token_pool_bytes=capacity.token_pool_bytes,
                         device_state_pool_bytes=capacity.state_pool_bytes,
                         state_share=plan.host.state_share)
    return replace(plan, layout=layout, capacity=capacity, workload=None, host=host)
