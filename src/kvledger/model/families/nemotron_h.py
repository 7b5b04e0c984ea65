"""nemotron_h (Nemotron-H): Mamba2 + GQA layers, plus MLP and MoE layers that cache nothing.

The layout is `hybrid_override_pattern`, one character per decoder layer: "M" Mamba2, "*"
attention, "-" MLP, "E" MoE; newer configs spell it as the list `layers_block_type`
("mamba", "attention", "mlp", "moe"). As in SGLang's NemotronHConfig, every character is a
decoder layer: `num_hidden_layers` is the pattern's length and `mamba_layer_ids` /
`full_attention_layer_ids` are positions in it, so the attention layers of Nemotron-H-56B are
7, 18, …, 106. MLP and MoE layers are absent from `layers` but counted in `num_layers`.
Field names changed between releases (`n_groups` → `mamba_n_groups`, `conv_kernel` →
`mamba_d_conv`, `attention_head_dim` → `head_dim`); either spelling is read. MLPs and experts
use relu² without a gate (up + down projections only).
"""

from __future__ import annotations

from kvledger.model import weights
from kvledger.model.arch import AttnKind, Family, LayerKind, LayerSpec, ModelArch, StateShape
from kvledger.model.context import context_tokens
from kvledger.model.families.gqa import gqa_params, gqa_shape
from kvledger.model.families.mamba2 import mamba2_params, mamba2_state, pinned_ssm_dtype
from kvledger.model.params import ParamCounts
from kvledger.model.reader import ConfigReader

PATTERN = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}
CACHE_KIND = {"mamba": LayerKind.LINEAR, "attention": LayerKind.FULL}


def block_types(root: ConfigReader) -> list[str]:
    by_pattern = None
    if root.has("hybrid_override_pattern") or not root.has("layers_block_type"):
        pattern = root.str("hybrid_override_pattern")
        bad = sorted(set(pattern) - set(PATTERN))
        if bad or not pattern:
            raise root.error(
                "hybrid_override_pattern",
                f"has characters {bad} (expected a non-empty string of {''.join(PATTERN)})",
            )
        by_pattern = [PATTERN[c] for c in pattern]
    types = root.str_list("layers_block_type", by_pattern)
    for i, kind in enumerate(types):
        if kind not in PATTERN.values():
            raise root.error(
                f"layers_block_type[{i}]",
                f"is {kind!r} (expected one of {sorted(PATTERN.values())})",
            )
    if by_pattern is not None and types != by_pattern:
        raise root.error(
            "layers_block_type", "disagrees with hybrid_override_pattern (expected the same layers)"
        )
    num_layers = root.int("num_hidden_layers", len(types), minimum=1)
    if num_layers != len(types):
        raise root.error(
            "num_hidden_layers", f"is {num_layers} but the layer pattern has {len(types)} layers"
        )
    return types


def mamba_state(root: ConfigReader) -> StateShape:
    heads = root.int("mamba_num_heads", minimum=1)
    groups = root.int(root.pick("mamba_n_groups", "n_groups"), minimum=1)
    if heads % groups:
        raise root.error(
            root.pick("mamba_n_groups", "n_groups"),
            f"is {groups} (expected a divisor of mamba_num_heads={heads})",
        )
    return mamba2_state(
        heads=heads,
        head_dim=root.int("mamba_head_dim", minimum=1),
        groups=groups,
        d_state=root.int("ssm_state_size", minimum=1),
        conv_kernel=root.int(root.pick("mamba_d_conv", "conv_kernel"), minimum=2),
        ssm_dtype=pinned_ssm_dtype(root),
    )


def read(root: ConfigReader, name: str) -> ModelArch:
    types = block_types(root)
    gqa = gqa_shape(root, head_dim_key=root.pick("head_dim", "attention_head_dim"))
    state = mamba_state(root)
    params = _param_counts(root, state, gqa_params(root, gqa), types)
    return ModelArch(
        name=name,
        source=root.source,
        family=Family.NEMOTRON_H,
        model_type=root.str("model_type"),
        layers=tuple(
            LayerSpec(index=i, kind=CACHE_KIND[kind])
            for i, kind in enumerate(types)
            if kind in CACHE_KIND
        ),
        attn=AttnKind.GQA,
        gqa=gqa,
        state=state,
        num_draft_layers=root.int("num_nextn_predict_layers", 0, minimum=0),
        max_context_tokens=context_tokens(root),
        num_params=params.total,
        params=params,
        quant=weights.quant_method(root),
        weight_bytes_per_param=weights.bytes_per_param(root),
        num_decoder_layers=len(types),
    )


def _param_counts(
    root: ConfigReader, state: StateShape, attention: int, types: list[str]
) -> ParamCounts:
    """Each block's weights, by the part SGLang shards them over (see kvledger.sglang.rankweights)."""
    hidden = root.int("hidden_size", minimum=1)
    count = {kind: types.count(kind) for kind in PATTERN.values()}
    mlp = experts = 0
    # MLP and MoE fields are required only when the pattern has such layers.
    if count["mlp"]:
        mlp += count["mlp"] * weights.mlp(
            hidden=hidden, intermediate=root.int("intermediate_size", minimum=1), gated=False
        )
    if count["moe"]:
        expert = root.int("moe_intermediate_size", minimum=1)
        num_experts = root.int("n_routed_experts", minimum=1)
        shared = root.int("n_shared_experts", 1, minimum=0) * root.int(
            "moe_shared_expert_intermediate_size", expert, minimum=1)
        experts = count["moe"] * num_experts * weights.mlp(
            hidden=hidden, intermediate=expert, gated=False)
        mlp += count["moe"] * (
            weights.mlp(hidden=hidden, intermediate=shared, gated=False)  # shared experts
            + hidden * num_experts  # router
        )
    embedding, lm_head = weights.embedding_parts(root)
    return ParamCounts(
        embedding=embedding,
        lm_head=lm_head,
        attention=count["attention"] * attention,
        linear_mixers=count["mamba"] * mamba2_params(hidden, state),
        mlp=mlp,
        experts=experts,
        vision=0,
    )
