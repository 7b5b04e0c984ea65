"""Two deployments side by side: every quantity the purchase turns on, differences marked.

Values are the plans' own numbers (exact integers, codes for enumerations); a quantity
differs when the two values are not equal.

>>> from kvledger.deploy import Deployment
>>> from kvledger.plan import make_plan
>>> a = make_plan(deployment=Deployment(tp_size=8), gpu="H200")
>>> b = make_plan(deployment=Deployment(tp_size=8, dp_size=8, enable_dp_attention=True),
...               gpu="H200")
>>> [d.quantity for d in compare(a, b) if d.differs][:4]
['dp_size', 'attn_tp_size', 'available_bytes', 'slot_bytes']
"""

from __future__ import annotations

from dataclasses import dataclass

from kvledger.plan import Plan


@dataclass(frozen=True, slots=True, kw_only=True)
class Difference:
    quantity: str  # a machine name (`running_requests`)
    label: str  # the words a table prints
    a: object
    b: object

    @property
    def differs(self) -> bool:
        return self.a != self.b


def _quantities(plan: Plan) -> list[tuple[str, str, object]]:
    lay, cap, dep, tot = plan.layout, plan.capacity, plan.layout.deployment, plan.capacity.totals
    work = plan.workload
    return [
        ("model", "model", plan.model.name),
        ("rules", "rule set", lay.rules.name),
        ("gpu", "GPU", plan.gpu.name if plan.gpu else None),
        ("tp_size", "tp", dep.tp_size),
        ("dp_size", "dp", dep.dp_size),
        ("attn_tp_size", "attn_tp", dep.attn_tp_size),
        ("kv_cache_dtype", "KV dtype", dep.kv_cache_dtype.value),
        ("mamba_ssm_dtype", "state dtype",
         dep.mamba_ssm_dtype.value if dep.mamba_ssm_dtype else None),
        ("page_tokens", "page (tokens)", lay.page_tokens),
        ("available_bytes", "memory per rank after weights (B)", cap.memory.available_bytes),
        ("token_bytes", "bytes per token per rank", cap.token_bytes),
        ("slot_bytes", "bytes per state slot per rank", cap.slot_bytes),
        ("request_bytes", "bytes per request per rank", plan.ledgers.request.total_bytes),
        ("state_slots", "K state slots per worker", cap.state_slots),
        ("max_total_tokens", "T tokens per worker", cap.max_total_tokens),
        ("max_running_requests", "N running requests per worker", cap.max_running_requests),
        ("ranks", "GPUs", tot.ranks),
        ("workers", "attention-DP workers", tot.workers),
        ("running_requests", "running requests (deployment)", tot.running_requests),
        ("tokens", "tokens (deployment)", tot.tokens),
        ("token_pool_bytes", "HBM token pools (deployment, B)", tot.token_pool_bytes),
        ("state_pool_bytes", "HBM state pools (deployment, B)", tot.state_pool_bytes),
        ("side_bytes", "HBM side buffers (deployment, B)", tot.side_bytes),
        ("binding", "binding constraint", cap.binding.code),
        ("workload_fits", "workload fits", None if work is None else work.fits),
    ]


def compare(a: Plan, b: Plan) -> list[Difference]:
    """Every quantity of `a` beside the same of `b`, in a fixed order."""
    return [Difference(quantity=qa, label=la, a=va, b=vb)
            for (qa, la, va), (_, _, vb) in zip(_quantities(a), _quantities(b), strict=True)]
