"""Which decoder layers carry a dense MLP and which an MoE block, and what each weighs.

Two conventions cover the supported families:
- DeepSeek style (DeepSeek-V3/V3.2, GLM-5.x, Kimi-Linear): `mlp_layer_types` ("dense" /
  "sparse") when given, else MoE on layer i iff i >= first_k_dense_replace and
  i % moe_layer_freq == 0 (SGLang deepseek_v2.py, DeepseekV2DecoderLayer._is_layer_sparse).
- Qwen style (Qwen3-Next, Qwen3.5): MoE on layer i iff num_experts > 0, i is not in
  `mlp_only_layers` and (i + 1) % decoder_sparse_step == 0 (Qwen3-Next decoder layer).

>>> from kvledger.model.reader import ConfigReader
>>> r = ConfigReader({"hidden_size": 8, "intermediate_size": 32, "moe_intermediate_size": 4,
...                   "n_routed_experts": 2, "n_shared_experts": 1,
...                   "first_k_dense_replace": 1}, "c.json")
>>> plan = deepseek_mlp_plan(r, num_layers=3)
>>> sorted(plan.moe_layers), plan.dense_params, plan.moe_params, plan.total_params(3)
([1, 2], 768, 304, 1376)
"""

from __future__ import annotations

from dataclasses import dataclass

from kvledger.model import weights
from kvledger.model.reader import ConfigReader

MLP_LAYER_TYPES = ("dense", "sparse")


@dataclass(frozen=True, slots=True, kw_only=True)
class MlpPlan:
    moe_layers: frozenset[int]  # 0-based ids of layers with an MoE block
    dense_params: int  # weights of one dense MLP
    moe_params: int  # weights of one MoE block
    expert_params: int = 0  # the routed experts of one MoE block (the rest: shared + router)

    def layer_params(self, index: int) -> int:
        return self.moe_params if index in self.moe_layers else self.dense_params

    def total_params(self, num_layers: int) -> int:
        return sum(self.layer_params(i) for i in range(num_layers))

    @property
    def expert_total(self) -> int:
        """Routed-expert weights over all MoE layers."""
        return len(self.moe_layers) * self.expert_params

    @property
    def draft_ffn_params(self) -> int:
        """An MTP layer's feed-forward block: the MoE block when the model has one."""
        return self.moe_params if self.moe_layers else self.dense_params


def deepseek_mlp_plan(text: ConfigReader, num_layers: int) -> MlpPlan:
    hidden = text.int("hidden_size", minimum=1)
    num_experts = text.int(text.pick("n_routed_experts", "num_experts"), 0, minimum=0)
    if text.has("mlp_layer_types"):
        kinds = text.str_list("mlp_layer_types")
        if len(kinds) != num_layers:
            raise text.error(
                "mlp_layer_types",
                f"has {len(kinds)} entries (expected num_hidden_layers={num_layers})",
            )
        for i, kind in enumerate(kinds):
            if kind not in MLP_LAYER_TYPES:
                raise text.error(
                    f"mlp_layer_types[{i}]", f"is {kind!r} (expected 'dense' or 'sparse')"
                )
        moe_layers = frozenset(i for i, kind in enumerate(kinds) if kind == "sparse")
    elif num_experts:
        first_dense = text.int("first_k_dense_replace", 0, minimum=0)
        freq = text.int("moe_layer_freq", 1, minimum=1)
        moe_layers = frozenset(i for i in range(first_dense, num_layers) if i % freq == 0)
    else:
        moe_layers = frozenset()
    moe_params = expert_params = 0
    if moe_layers:
        expert_intermediate = text.int("moe_intermediate_size", minimum=1)
        num_shared = text.int(text.pick("n_shared_experts", "num_shared_experts"), 0, minimum=0)
        routed = text.int(text.pick("n_routed_experts", "num_experts"), minimum=1)
        moe_params = weights.moe(
            hidden=hidden,
            num_experts=routed,
            expert_intermediate=expert_intermediate,
            shared_intermediate=num_shared * expert_intermediate,
        )
        expert_params = routed * weights.mlp(hidden=hidden, intermediate=expert_intermediate)
    return MlpPlan(
        moe_layers=moe_layers,
        dense_params=_dense_params(text, hidden, num_layers - len(moe_layers)),
        moe_params=moe_params,
        expert_params=expert_params,
    )


def qwen_mlp_plan(text: ConfigReader, num_layers: int) -> MlpPlan:
    hidden = text.int("hidden_size", minimum=1)
    num_experts = text.int("num_experts", 0, minimum=0)
    step = text.int("decoder_sparse_step", 1, minimum=1)
    dense_only = set(text.int_list("mlp_only_layers", []))
    moe_layers = frozenset(
        i for i in range(num_layers) if num_experts and i not in dense_only and (i + 1) % step == 0
    )
    moe_params = expert_params = 0
    if moe_layers:
        shared = text.int("shared_expert_intermediate_size", 0, minimum=0)
        expert_intermediate = text.int("moe_intermediate_size", minimum=1)
        moe_params = weights.moe(
            hidden=hidden,
            num_experts=num_experts,
            expert_intermediate=expert_intermediate,
            shared_intermediate=shared,
        ) + (hidden if shared else 0)  # shared_expert_gate
        expert_params = num_experts * weights.mlp(hidden=hidden, intermediate=expert_intermediate)
    return MlpPlan(
        moe_layers=moe_layers,
        dense_params=_dense_params(text, hidden, num_layers - len(moe_layers)),
        moe_params=moe_params,
        expert_params=expert_params,
    )


def _dense_params(text: ConfigReader, hidden: int, num_dense: int) -> int:
    # A pure-MoE model may omit intermediate_size; it is required only when a layer is dense.
    if num_dense == 0:
        return 0
    return weights.mlp(hidden=hidden, intermediate=text.int("intermediate_size", minimum=1))
