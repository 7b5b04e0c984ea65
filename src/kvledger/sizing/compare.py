"""Two deployments side by side: every quantity the purchase turns on, differences marked.

Values are the plans' own numbers (exact integers, codes for enumerations); a quantity
differs when the two values are not equal. Either side may be a vLLM plan (across engines):
it fills the flags both engines share and the deployment totals (`kvledger.sizing.vllm_point`:
DP engines × per-engine figures, concurrency from num_gpu_blocks ÷ blocks per max_model_len
request), None where SGLang's quantity has no vLLM counterpart (state slots, per-token bytes),
and adds vLLM's own (blocks, concurrency, max_model_len), None on an SGLang side.

>>> from kvledger.sglang.deploy import Deployment
>>> from kvledger.sglang.plan import make_plan
>>> a = make_plan(deployment=Deployment(tp_size=8), gpu="H200")
>>> b = make_plan(deployment=Deployment(tp_size=8, dp_size=8, enable_dp_attention=True),
...               gpu="H200")
>>> [d.quantity for d in compare(a, b) if d.differs][:4]
['dp_size', 'attn_tp_size', 'available_bytes', 'slot_bytes']
"""

from __future__ import annotations

from dataclasses import dataclass

from kvledger.sglang.plan import Plan
from kvledger.sizing.vllm_point import vllm_binding, vllm_fits, vllm_totals
from kvledger.vllm.plan import VllmPlan

# (machine name, label), in table order; the last four are vLLM's own
QUANTITIES = (
    ("model", "model"), ("engine", "engine"), ("rules", "rule set"), ("gpu", "GPU"),
    ("tp_size", "tp"), ("dp_size", "dp"), ("attn_tp_size", "attn_tp"),
    ("kv_cache_dtype", "KV dtype"), ("mamba_ssm_dtype", "state dtype"),
    ("page_tokens", "page (tokens)"),
    ("available_bytes", "memory per rank after weights (B)"),
    ("token_bytes", "bytes per token per rank"),
    ("slot_bytes", "bytes per state slot per rank"),
    ("request_bytes", "bytes per request per rank"),
    ("state_slots", "K state slots per worker"),
    ("max_total_tokens", "T tokens per worker"),
    ("max_running_requests", "N running requests per worker"),
    ("ranks", "GPUs"), ("workers", "attention-DP workers"),
    ("running_requests", "running requests (deployment)"), ("tokens", "tokens (deployment)"),
    ("token_pool_bytes", "HBM token pools (deployment, B)"),
    ("state_pool_bytes", "HBM state pools (deployment, B)"),
    ("side_bytes", "HBM side buffers (deployment, B)"),
    ("binding", "binding constraint"), ("workload_fits", "workload fits"),
    ("num_gpu_blocks", "vLLM blocks per engine (num_gpu_blocks)"),
    ("blocks_per_request", "vLLM blocks per max_model_len request"),
    ("max_concurrency", "vLLM max concurrency per engine"),
    ("max_model_len", "vLLM max_model_len (tokens)"),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Difference:
    quantity: str  # a machine name (`running_requests`)
    label: str  # the words a table prints
    a: object
    b: object

    @property
    def differs(self) -> bool:
        return self.a != self.b


def _sglang(plan: Plan) -> dict[str, object]:
    lay, cap, dep, tot = plan.layout, plan.capacity, plan.layout.deployment, plan.capacity.totals
    work = plan.workload
    return {
        "model": plan.model.name, "engine": "sglang", "rules": lay.rules.name,
        "gpu": plan.gpu.name if plan.gpu else None, "tp_size": dep.tp_size,
        "dp_size": dep.dp_size, "attn_tp_size": dep.attn_tp_size,
        "kv_cache_dtype": dep.kv_cache_dtype.value,
        "mamba_ssm_dtype": dep.mamba_ssm_dtype.value if dep.mamba_ssm_dtype else None,
        "page_tokens": lay.page_tokens, "available_bytes": cap.memory.available_bytes,
        "token_bytes": cap.token_bytes, "slot_bytes": cap.slot_bytes,
        "request_bytes": plan.ledgers.request.total_bytes, "state_slots": cap.state_slots,
        "max_total_tokens": cap.max_total_tokens,
        "max_running_requests": cap.max_running_requests, "ranks": tot.ranks,
        "workers": tot.workers, "running_requests": tot.running_requests, "tokens": tot.tokens,
        "token_pool_bytes": tot.token_pool_bytes, "state_pool_bytes": tot.state_pool_bytes,
        "side_bytes": tot.side_bytes, "binding": cap.binding.code,
        "workload_fits": None if work is None else work.fits,
    }


def _vllm(plan: VllmPlan, requests: int | None) -> dict[str, object]:
    lay, cap, dep, tot = plan.layout, plan.capacity, plan.layout.deployment, vllm_totals(plan)
    return {
        "model": plan.model.name, "engine": "vllm", "rules": lay.rules.name,
        "gpu": plan.gpu.name if plan.gpu else None,
        "tp_size": dep.tensor_parallel_size, "dp_size": dep.data_parallel_size,
        "attn_tp_size": dep.tensor_parallel_size, "kv_cache_dtype": dep.kv_cache_dtype,
        "mamba_ssm_dtype": dep.mamba_ssm_cache_dtype, "page_tokens": lay.block_tokens,
        "ranks": tot.ranks, "workers": tot.workers, "running_requests": tot.running_requests,
        "tokens": tot.tokens, "token_pool_bytes": tot.token_pool_bytes,
        "state_pool_bytes": tot.state_pool_bytes, "side_bytes": tot.side_bytes,
        "binding": vllm_binding(plan),
        "workload_fits": vllm_fits(plan, requests, None if requests is None
                                   else lay.max_model_len),
        "num_gpu_blocks": cap.num_blocks, "blocks_per_request": cap.blocks_per_request,
        "max_concurrency": round(cap.max_concurrency, 2), "max_model_len": lay.max_model_len,
    }


def compare(a: Plan | VllmPlan, b: Plan | VllmPlan, *,
            requests: int | None = None) -> list[Difference]:
    """Every quantity of `a` beside the same of `b`, in a fixed order; `requests` is the
    workload a vLLM side is checked against (an SGLang plan carries its own check)."""
    va, vb = ((_vllm(p, requests) if isinstance(p, VllmPlan) else _sglang(p)) for p in (a, b))
    return [Difference(quantity=q, label=label, a=va.get(q), b=vb.get(q))
            for q, label in QUANTITIES]
