"""granitemoehybrid (IBM Granite 4.0-H): Mamba2 and GQA sequence mixers, an MoE FFN on every layer.

`layer_types` names each decoder layer's mixer, "mamba" or "attention" (SGLang's native
GraniteMoeHybrid model class reads the same list). Mamba2 fields are `mamba_n_heads`,
`mamba_d_head`, `mamba_n_groups`, `mamba_d_state`, `mamba_d_conv`; SGLang's
Mamba2StateShape.create keeps conv (d_conv − 1, heads·head_dim + 2·groups·d_state) and
temporal (heads, head_dim, d_state). Attention heads are hidden / num_attention_heads wide
unless `head_dim` is set; `position_embedding_type: "nope"` changes no cache bytes.

Weights, as transformers' GraniteMoeHybridDecoderLayer builds them: every layer has a
`block_sparse_moe` (num_local_experts gated experts of `intermediate_size`, and a router; none
when num_local_experts is 0) and a `shared_mlp` (gated, `shared_intermediate_size`); the
Mamba2 in_proj/conv/out_proj and GQA projections as for Nemotron-H. Norms and biases are left
out.
"""

from __future__ import annotations

from kvledger.model import weights
from kvledger.model.arch import AttnKind, Family, LayerKind, LayerSpec, ModelArch
from kvledger.model.context import context_tokens
from kvledger.model.families.gqa import gqa_params, gqa_shape
from kvledger.model.families.mamba2 import mamba2_params, mamba2_state, pinned_ssm_dtype
from kvledger.model.params import ParamCounts
from kvledger.model.reader import ConfigReader

KINDS = {"mamba": LayerKind.LINEAR, "attention": LayerKind.FULL}


def read(root: ConfigReader, name: str) -> ModelArch:
    num_layers = root.int("num_hidden_layers", minimum=1)
    types = root.str_list("layer_types")
    if len(types) != num_layers:
        raise root.error("layer_types", f"has {len(types)} entries (expected "
                         f"num_hidden_layers={num_layers})")
    for i, kind in enumerate(types):
        if kind not in KINDS:
            raise root.error(f"layer_types[{i}]", f"is {kind!r} (expected 'mamba' or 'attention')")
    if "attention" not in types:
        raise root.error("layer_types", "has no 'attention' layer (expected a hybrid)")
    state = mamba2_state(
        heads=root.int("mamba_n_heads", minimum=1),
        head_dim=root.int("mamba_d_head", minimum=1),
        groups=root.int("mamba_n_groups", 1, minimum=1),
        d_state=root.int("mamba_d_state", minimum=1),
        conv_kernel=root.int("mamba_d_conv", minimum=2),
        ssm_dtype=pinned_ssm_dtype(root),
    )
    hidden = root.int("hidden_size", minimum=1)
    gqa = gqa_shape(root)
    num_experts = root.int("num_local_experts", 0, minimum=0)
    expert = (weights.mlp(hidden=hidden, intermediate=root.int("intermediate_size", minimum=1))
              if num_experts else 0)
    shared = weights.mlp(hidden=hidden,
                         intermediate=root.int("shared_intermediate_size", 0, minimum=0))
    embedding, lm_head = weights.embedding_parts(root)
    params = ParamCounts(
        embedding=embedding,
        lm_head=lm_head,
        attention=types.count("attention") * gqa_params(root, gqa),
        linear_mixers=types.count("mamba") * mamba2_params(hidden, state),
        mlp=num_layers * (shared + hidden * num_experts),  # shared MLP + router per layer
        experts=num_layers * num_experts * expert,
        vision=0,
    )
    return ModelArch(
        name=name,
        source=root.source,
        family=Family.GRANITE_MOE_HYBRID,
        model_type=root.str("model_type"),
        layers=tuple(LayerSpec(index=i, kind=KINDS[kind]) for i, kind in enumerate(types)),
        attn=AttnKind.GQA,
        gqa=gqa,
        state=state,
        max_context_tokens=context_tokens(root),
        num_params=params.total,
        params=params,
        quant=weights.quant_method(root),
        weight_bytes_per_param=weights.bytes_per_param(root),
    )
