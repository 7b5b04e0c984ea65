"""`--engine sglang|vllm|sglang,vllm` for `kvledger plan`: the plans of the engines chosen.

The engine is the one named, else the one the rule set or a pasted command implies
(`--rules vllm-0.13`, `-- vllm serve …`), else SGLang (`cli.options.choose_engines`, which
every command taking `--engine` shares). The plans come from `kvledger.sizing.flag_plans`:
the flags given are the source engine's, and every engine chosen plans from them.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvledger.cli.options.plan import EngineOpt, PlanInputs, choose_engines
from kvledger.cli.options.terms import ActivationOpt, CudagraphOpt, NonTorchOpt, UtilizationOpt
from kvledger.core.engines import Engine
from kvledger.core.plan import EnginePlan
from kvledger.core.terms import MemoryTerms
from kvledger.sizing.flag_plans import PlanAsk, plans_from_flags


@dataclass(frozen=True, slots=True)
class EngineInputs:
    engine: EngineOpt = None
    activation_gib: ActivationOpt = None
    non_torch_gib: NonTorchOpt = None
    cudagraph_gib: CudagraphOpt = None
    gpu_memory_utilization: UtilizationOpt = None

    def terms(self, inputs: PlanInputs) -> MemoryTerms:
        return MemoryTerms(weights_gib=inputs.weights_gib, available_gib=inputs.available_gib,
                           activation_gib=self.activation_gib, non_torch_gib=self.non_torch_gib,
                           cudagraph_gib=self.cudagraph_gib,
                           gpu_memory_utilization=self.gpu_memory_utilization)


def plans_for(inputs: PlanInputs, eng: EngineInputs, extra: list[str], *,
              requests: int | None = None, context: int | None = None
              ) -> tuple[tuple[EnginePlan, ...], tuple[str, ...]]:
    """(the plans of the engines chosen, in --engine order; the flags ignored)."""
    choice = choose_engines(eng.engine, inputs.rules, extra)
    ask = PlanAsk(model=inputs.model, family=inputs.family, gpu=inputs.gpu,
                  gpu_memory_gib=inputs.gpu_memory_gib, terms=eng.terms(inputs),
                  sglang_rules=choice.sglang_rules, vllm_rules=choice.vllm_rules,
                  requests=requests, context_tokens=context,
                  host_state_share=inputs.hicache_state_share)
    return plans_from_flags(extra, tuple(Engine(e) for e in choice.engines), ask)
