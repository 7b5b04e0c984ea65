"""EnginePlan: what every engine's plan answers, so its consumers never ask which engine made it.

SGLang's plan (`kvledger.sglang.plan.SglangPlan`) and vLLM's (`kvledger.vllm.plan.VllmPlan`)
both satisfy it; sweeps, comparisons, recommendations, the CLI and the Python API read plans
through it alone. Each plan keeps its engine's own detail (`layout`, `capacity`, `ledgers`)
for the engine's own views.

Contract (every member is a pure read; a plan is frozen):
- identity: `engine`, `model` (a `kvledger.model.arch.ModelArch`; typed here by its name,
  since core sits below model), `gpu`, `rules` (the rule set, by `name`), `deployment` (the
  engine's resolved flags, hashable: equal deployments are one layout), `notes` (every
  assumption the plan made, in words);
- capacity: `totals` (the whole deployment), `binding` (what caps concurrency at the plan's
  own context length), `context_tokens` (the longest request it serves), `page_tokens`,
  `fit_at(C)` (requests of C tokens that fit at once, like for like across engines),
  `fits(R, C)` and `headroom(R, C)` (a workload of R concurrent requests of C tokens);
- bytes: `ledgers_by_name()` (every ledger by its JSON key), `pools` (the device pools one
  rank allocates), `simulatable` (whether kvledger's memory system builds those pools);
- provenance: `launch_command(ref)` (the launch command the plan came from, its flags as
  given), `layout_fields()`, `flag_fields()`, `per_worker()`, `unit_bytes()` (the named
  numbers the sweep, compare and recommend documents carry), `to_json()` (the plan's own
  `--json` document).

>>> Binding(code="tokens", label="token KV")
Binding(code='tokens', label='token KV')
>>> ContextFit(context_tokens=32_768, per_worker=48, workers=8,
...            binding=Binding(code="state_slots", label="state slots")).requests
384
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Protocol

from kvledger.core.engines import Engine
from kvledger.core.gpus import GPU
from kvledger.core.ledger import Ledger
from kvledger.core.registry import Named
from kvledger.core.totals import DeploymentTotals


@dataclass(frozen=True, slots=True)
class Binding:
    """A constraint that caps concurrency: a machine code (JSON) and the words tables print."""

    code: str
    label: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextFit:
    """How many requests of one length a deployment holds at once, and what runs out first.

    `per_worker` is 0 when the engine refuses requests that long (longer than its context
    length or max_model_len)."""

    context_tokens: int
    per_worker: int  # on one scheduler (SGLang: attention-DP worker or replica; vLLM: engine)
    workers: int
    binding: Binding

    @property
    def requests(self) -> int:
        """Over the whole deployment."""
        return self.per_worker * self.workers

    def to_json(self) -> dict[str, Any]:
        """The `context_fit` key of the plan, sweep and engines documents."""
        return {"context_tokens": self.context_tokens, "requests": self.requests,
                "per_worker": self.per_worker, "workers": self.workers,
                "binding": self.binding.code, "binding_label": self.binding.label}


class EnginePlan(Protocol):
    """One engine's plan of one deployment (module doc for the contract)."""

    @property
    def engine(self) -> Engine: ...

    @property
    def model(self) -> Named: ...

    @property
    def gpu(self) -> GPU | None: ...

    @property
    def rules(self) -> Named: ...

    @property
    def deployment(self) -> Hashable: ...

    @property
    def notes(self) -> tuple[str, ...]: ...

    @property
    def totals(self) -> DeploymentTotals: ...

    @property
    def binding(self) -> Binding: ...

    @property
    def context_tokens(self) -> int: ...

    @property
    def page_tokens(self) -> int: ...

    def fit_at(self, context_tokens: int | None = None) -> ContextFit:
        """Requests of `context_tokens` tokens that fit at once (default: the length of the
        workload the plan was made with, else `self.context_tokens`)."""
        ...

    def fits(self, requests: int | None, context_tokens: int | None) -> bool | None:
        """Whether `requests` concurrent requests of `context_tokens` tokens fit; None when
        both are None and the plan carries no workload of its own."""
        ...

    def headroom(self, requests: int, context_tokens: int | None) -> float:
        """Capacity ÷ need of that workload on its tightest ledger (≥ 1 when it fits)."""
        ...

    def ledgers_by_name(self) -> dict[str, Ledger]: ...

    @property
    def pools(self) -> Ledger: ...

    @property
    def simulatable(self) -> bool: ...

    def launch_command(self, model_ref: str | None = None, *, nodes: int = 1) -> str: ...

    def layout_fields(self, *, as_given: bool = False) -> dict[str, Any]: ...

    def flag_fields(self) -> dict[str, Any]: ...

    def per_worker(self) -> dict[str, int | float]: ...

    def unit_bytes(self) -> dict[str, int]: ...

    def to_json(self, ignored_flags: tuple[str, ...] = ()) -> dict[str, Any]: ...
