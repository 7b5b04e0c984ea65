"""Two deployments side by side: every quantity the purchase turns on, differences marked.

Values are the plans' own numbers (exact integers, codes for enumerations), read through the
engine-plan interface (`kvledger.core.plan.EnginePlan`), so either side may be either
engine's: each fills the flags both engines share and the deployment totals, and its own
quantities (SGLang: bytes per token, slot and request, K, T, N per worker; vLLM: blocks,
concurrency, max_model_len per DP engine), None on the other engine's side. A quantity differs
when the two values are not equal.

>>> from kvledger.sglang.deploy import Deployment
>>> from kvledger.sglang.plan import make_plan
>>> a = make_plan(deployment=Deployment(tp_size=8), gpu="H200")
>>> b = make_plan(deployment=Deployment(tp_size=8, dp_size=8, enable_dp_attention=True),
...               gpu="H200")
>>> [d.quantity for d in compare(a, b) if d.differs][:4]
['dp_size', 'attn_tp_size', 'available_bytes', 'slot_bytes']
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields
from typing import Any

from kvledger.core.plan import EnginePlan
from kvledger.sizing.documents import compare_json

# (machine name, label), in table order; the `fit_*` rows are like for like across engines
# (`EnginePlan.fit_at`); the last four are vLLM's own
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
    ("binding", "binding constraint"),
    ("fit_context_tokens", "C: tokens per request (--context, else the context length)"),
    ("fit_requests", "requests of C tokens at once (deployment)"),
    ("fit_binding", "first to run out at C"),
    ("workload_fits", "workload fits"),
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


@dataclass(frozen=True, slots=True, kw_only=True)
class Comparison(Sequence[Difference]):
    """Every quantity of plan `a` beside plan `b` (a sequence of `Difference`)."""

    a: EnginePlan
    b: EnginePlan
    rows: tuple[Difference, ...]

    def __getitem__(self, index: int | slice) -> Any:  # int → Difference, slice → tuple
        return self.rows[index]

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[Difference]:
        return iter(self.rows)

    @property
    def differences(self) -> int:
        return sum(d.differs for d in self.rows)

    @property
    def notes(self) -> tuple[str, ...]:
        """Both plans' assumptions, each side's marked."""
        return (*(f"a: {n}" for n in self.a.notes), *(f"b: {n}" for n in self.b.notes))

    def to_json(self, ignored_flags: tuple[str, ...] = ()) -> dict[str, Any]:
        """The `kvledger compare --json` document (`kvledger.sizing.documents`)."""
        return compare_json(self, ignored_flags=ignored_flags)


def _values(plan: EnginePlan, requests: int | None,
            context_tokens: int | None) -> dict[str, object]:
    """The plan's quantities by machine name; those of another engine are left out (None)."""
    layout, tot, fit = plan.layout_fields(), plan.totals, plan.fit_at(context_tokens)
    own = {name: round(value, 2) if isinstance(value, float) else value
           for name, value in plan.per_worker().items()}
    return {
        "model": plan.model.name, "engine": plan.engine.value, "rules": plan.rules.name,
        "gpu": plan.gpu.name if plan.gpu else None,
        **{name: layout[name] for name in ("tp_size", "dp_size", "attn_tp_size",
                                           "kv_cache_dtype", "mamba_ssm_dtype")},
        "page_tokens": plan.page_tokens, **plan.unit_bytes(), **own,
        **{f.name: getattr(tot, f.name) for f in fields(tot)},
        "binding": plan.binding.code,
        "fit_context_tokens": fit.context_tokens, "fit_requests": fit.requests,
        "fit_binding": fit.binding.code,
        "workload_fits": plan.fits(requests, context_tokens),
    }


def compare(a: EnginePlan, b: EnginePlan, *, requests: int | None = None,
            context_tokens: int | None = None) -> Comparison:
    """Every quantity of `a` beside the same of `b`, in a fixed order. Both sides are checked
    against `requests` concurrent requests of `context_tokens` tokens; with neither, each
    plan's own workload check (an SGLang plan made with one), else None."""
    va, vb = (_values(p, requests, context_tokens) for p in (a, b))
    return Comparison(a=a, b=b, rows=tuple(Difference(quantity=q, label=label, a=va.get(q),
                                                      b=vb.get(q)) for q, label in QUANTITIES))
