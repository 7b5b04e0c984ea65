"""Per-stage capacity of a pipeline-parallel server (`--pp-size`), and its totals.

Followed (sglang 0.5.21 and 0.5.23 wheels, mem_cache/kv_cache_configurator.py):
1. `_handle_max_mamba_cache`: every stage charges the state pool at the *largest* stage's
   share, int(S_all · max_stage_linear_layers / linear_layers), "so every rank derives the same
   pool without a collective"; the pool each stage then allocates holds only its own linear
   layers (`_get_mamba_layer_ids_for_req_pool` filters to [start_layer, end_layer)), so a
   lighter stage over-reserves (K + 1)·(S_charged − S_own).
2. `_apply_token_constraints`: each stage sizes T from its own per-token bytes (its own full
   layers), then T is all-reduced with MIN over the stages; N follows from that T
   (`resolve_max_num_reqs`), the same on every stage.
The stages' layers are `kvledger.sglang.stagelayers.pp_indices`. Each stage is given the same
memory (with --gpu, the weights are split evenly over the stages: a simplification, the
embedding and lm_head sit on the first and last stage).

GLM-5.3-Flash, pp 4 (11/11/11/12 layers; full layers 2/3/3/3, linear 9/8/8/9), 100 GiB after
weights per rank: S charged = int(147,619,840 · 9/34) = 39,075,840 B; K = 1,299; stage 1 (3
full layers, 1,980 B/token) binds T; extra_buffer without overlap reserves 4 slots a request:



>>> from kvledger.model.config import load_model
>>> from kvledger.sglang.capacity import MemoryInput
>>> from kvledger.sglang.deploy import Deployment, KVDtype
>>> from kvledger.sglang.resolve import resolve
>>> from kvledger.sglang.rules import RULES
>>> from kvledger.core.units import GiB
>>> lay = resolve(load_model(), Deployment(pp_size=4, kv_cache_dtype=KVDtype.FP8_E4M3),
...               RULES["sglang-0.5.21"])
>>> pipe = plan_stages(lay, MemoryInput.available(100 * GiB))
>>> [(s.start_layer, s.end_layer, s.num_linear_layers) for s in pipe.stages]
[(0, 11, 9), (11, 22, 8), (22, 33, 8), (33, 45, 9)]
>>> pipe.charged_slot_bytes, pipe.binding_stage, pipe.tokens
(39075840, 1, 28520512)
>>> cap = pipe.stages[0].capacity
>>> cap.state_slots, cap.layout.slots_per_request, cap.max_running_requests
(1299, 4, 324)
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kvledger.core.totals import DeploymentTotals
from kvledger.sglang.capacity import CapacityPlan, MemoryInput, plan_capacity
from kvledger.sglang.ledger import state_ledger
from kvledger.sglang.resolve import CacheLayout
from kvledger.sglang.stagelayers import check_stage_count, pp_indices, stage_model


@dataclass(frozen=True, slots=True, kw_only=True)
class StagePlan:
    pp_rank: int
    start_layer: int
    end_layer: int  # exclusive
    layout: CacheLayout  # the model cut to this stage's layers
    capacity: CapacityPlan  # K, T (the minimum over stages), N; state charged at the max share
    own_slot_bytes: int  # this stage's state slot: its own linear layers
    alone_tokens: int  # T this stage's own budget would hold, before the MIN over stages

    @property
    def num_full_layers(self) -> int:
        return self.layout.model.num_full_layers

    @property
    def num_linear_layers(self) -> int:
        return self.layout.model.num_linear_layers

    @property
    def allocated_state_pool_bytes(self) -> int:
        """What the stage's MambaPool really holds: K + 1 slots of its own layers."""
        cap = self.capacity
        return (cap.state_slots + 1) * self.own_slot_bytes if self.own_slot_bytes else 0

    @property
    def over_reserved_state_bytes(self) -> int:
        """Charged at the largest stage's share, allocated at its own."""
        return self.capacity.state_pool_bytes - self.allocated_state_pool_bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class PipelinePlan:
    stages: tuple[StagePlan, ...]
    charged_slot_bytes: int  # S at the largest stage's share (0: no state)

    @property
    def tokens(self) -> int:
        return self.stages[0].capacity.max_total_tokens

    @property
    def binding_stage(self) -> int:
        """The stage whose own budget holds the fewest tokens (the MIN's argument)."""
        return min(self.stages, key=lambda s: (s.alone_tokens, s.pp_rank)).pp_rank

    def totals(self, replicas: int) -> DeploymentTotals:
        """Deployment totals: tp × pp GPUs per pipeline; a pipeline is one scheduler."""
        first = self.stages[0].capacity
        dep = first.layout.deployment
        tp = dep.tp_size * replicas
        workers = dep.attn_dp_size * replicas
        return DeploymentTotals(
            ranks=tp * len(self.stages), workers=workers,
            running_requests=first.max_running_requests * workers,
            tokens=first.logical_tokens * workers,
            token_pool_bytes=sum(s.capacity.token_pool_bytes for s in self.stages) * tp,
            state_pool_bytes=sum(s.allocated_state_pool_bytes for s in self.stages) * tp,
            verify_bytes=sum(s.capacity.verify_bytes for s in self.stages) * tp,
            side_bytes=sum(s.capacity.side.total_bytes for s in self.stages) * tp)


def _charged_slot_bytes(lay: CacheLayout, stage_linear: list[int]) -> int:
    # SGLang multiplies by a float scale and truncates: int(per_req · (max / all)).
    total = state_ledger(lay).total_bytes
    layers = lay.model.num_linear_layers
    return int(total * (max(stage_linear) / max(layers, 1))) if total else 0


def plan_stages(lay: CacheLayout, memory: MemoryInput) -> PipelinePlan:
    """Every stage's K, T and N for a deployment with pp_size > 1 (module doc)."""
    pp = lay.deployment.pp_size
    assert pp > 1, "plan_stages is for pipeline-parallel deployments"
    check_stage_count(lay.model, pp)
    layouts = [replace(lay, model=stage_model(lay.model, r, pp)) for r in range(pp)]
    charged = _charged_slot_bytes(lay, [s.model.num_linear_layers for s in layouts])
    alone = [plan_capacity(s, memory, charged_slot_bytes=charged) for s in layouts]
    tokens = min(cap.max_total_tokens for cap in alone)  # the all-reduce MIN
    stages = []
    for r, (stage_lay, own) in enumerate(zip(layouts, alone, strict=True)):
        capped = replace(stage_lay, deployment=replace(stage_lay.deployment,
                                                       max_total_tokens=tokens))
        cap = plan_capacity(capped, memory, charged_slot_bytes=charged)
        start, end = pp_indices(lay.model.num_layers, r, pp)
        stages.append(StagePlan(pp_rank=r, start_layer=start, end_layer=end,
                                layout=stage_lay, capacity=replace(cap, layout=stage_lay),
                                own_slot_bytes=state_ledger(stage_lay).total_bytes,
                                alone_tokens=own.max_total_tokens))
    return PipelinePlan(stages=tuple(stages), charged_slot_bytes=charged)
