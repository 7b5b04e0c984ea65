"""granitemoehybrid (IBM Granite 4.0-H): Mamba2 and GQA sequence mixers, an MoE FFN on every layer.

`layer_types` names each decoder layer's mixer, "mamba" or "attention" (SGLang's native
GraniteMoeHybrid model class reads the same list). Mamba2 fields are `mamba_n_heads`,
`mamba_d_head`, `mamba_n_groups`, `mamba_d_state`, `mamba_d_conv`; SGLang's
Mamba2StateShape.create keeps conv (d_conv − 1, heads·head_dim + 2·groups·d_state) and
temporal (heads, head_dim, d_state). Attention heads are hidden / num_attention_heads wide
unless `head_dim` is set; `position_embedding_type: "nope"` changes no cache bytes.

Weights are not estimated (the MoE/shared-expert counts are not modelled here): --gpu needs
--weights-gib.
"""

from __future__ import annotations

from kvledger.model import weights
from kvledger.model.arch import AttnKind, Family, LayerKind, LayerSpec, ModelArch
from kvledger.model.context import context_tokens
from kvledger.model.families.gqa import gqa_shape
from kvledger.model.families.mamba2 import mamba2_state, pinned_ssm_dtype
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
    return ModelArch(
        name=name,
        source=root.source,
        family=Family.GRANITE_MOE_HYBRID,
        model_type=root.str("model_type"),
        layers=tuple(LayerSpec(index=i, kind=KINDS[kind]) for i, kind in enumerate(types)),
        attn=AttnKind.GQA,
        gqa=gqa_shape(root),
        state=state,
        max_context_tokens=context_tokens(root),
        num_params=None,
        quant=weights.quant_method(root),
        weight_bytes_per_param=weights.bytes_per_param(root),
    )
