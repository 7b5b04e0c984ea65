"""glm5_next (GLM-5.3-Flash): KDA linear layers + NoPE DSA layers with a pooled indexer.

The checkpoint is a multimodal wrapper: cache fields live under `text_config`, and the
presence of `vision_config` makes SGLang treat the model as multimodal. Two sources name the
layer kinds, `text_config.layer_types` and `linear_attn_config.kda_layers` /
`full_attn_layers` (0-based here); they must agree.
"""

from __future__ import annotations

from kvledger.model import weights
from kvledger.model.arch import AttnKind, Family, LayerKind, LayerSpec, ModelArch
from kvledger.model.context import context_tokens
from kvledger.model.families.deepseek_v3 import mla_param_counts, mla_params, mla_shape
from kvledger.model.families.dsa import indexer_owners, indexer_shape
from kvledger.model.families.kda import kda_layer_ids, kda_state
from kvledger.model.params import ParamCounts
from kvledger.model.reader import ConfigReader

FULL_TYPES = {"deepseek_sparse_attention", "full_attention"}
LINEAR_TYPES = {"linear_attention"}


def read(root: ConfigReader, name: str) -> ModelArch:
    text = root.section("text_config")
    num_layers = text.int("num_hidden_layers", minimum=1)
    linear = text.section("linear_attn_config")
    kda_ids = kda_layer_ids(linear, num_layers)
    layer_types = text.str_list("layer_types")
    if len(layer_types) != num_layers:
        raise text.error(
            "layer_types",
            f"has {len(layer_types)} entries (expected num_hidden_layers={num_layers})",
        )
    owners = indexer_owners(text, num_layers)
    layers = []
    for i, kind in enumerate(layer_types):
        if kind in LINEAR_TYPES:
            if i not in kda_ids:
                raise linear.error("kda_layers", f"lacks layer {i}, which layer_types calls linear")
            layers.append(LayerSpec(index=i, kind=LayerKind.LINEAR))
        elif kind in FULL_TYPES:
            if i in kda_ids:
                raise linear.error("kda_layers", f"lists layer {i}, which layer_types calls {kind}")
            layers.append(LayerSpec(index=i, kind=LayerKind.FULL, has_indexer=owners[i]))
        else:
            raise text.error(
                f"layer_types[{i}]",
                f"is {kind!r} (expected one of {sorted(FULL_TYPES | LINEAR_TYPES)})",
            )
    params = _num_params(root, text, linear, layers)
    return ModelArch(
        name=name,
        source=root.source,
        family=Family.GLM5_NEXT,
        model_type=root.str("model_type"),
        layers=tuple(layers),
        attn=AttnKind.DSA,
        mla=mla_shape(text),
        indexer=indexer_shape(text),
        state=kda_state(linear),
        num_draft_layers=text.int("num_nextn_predict_layers", 0, minimum=0),
        is_multimodal=root.has("vision_config"),
        vit_shape=(weights.vit_shape(root.section("vision_config"))
                   if root.has("vision_config") else None),
        max_context_tokens=context_tokens(text),
        num_params=params.total,
        params=params,
        quant=weights.quant_method(root),
        weight_bytes_per_param=weights.bytes_per_param(root),
    )


def _num_params(
    root: ConfigReader, text: ConfigReader, linear: ConfigReader, layers: list[LayerSpec]
) -> ParamCounts:
    hidden = text.int("hidden_size", minimum=1)
    indexer = indexer_shape(text)
    kda = weights.kda_mixer(
        hidden=hidden,
        heads=linear.int("num_heads", minimum=1),
        head_dim=linear.int("head_dim", minimum=1),
        conv_kernel=linear.int("short_conv_kernel_size", minimum=2),
    )
    indexer_params = weights.dsa_indexer(
        hidden=hidden,
        q_lora_rank=text.int("q_lora_rank", minimum=1),
        heads=indexer.n_heads,
        head_dim=indexer.head_dim,
    )
    vision = root.optional_section("vision_config")
    # The MTP block (layers.45) has its own DSA stack, indexer included.
    return mla_param_counts(
        text, len(layers),
        attention=(sum(layer.kind is LayerKind.FULL for layer in layers) * mla_params(text)
                   + sum(layer.has_indexer for layer in layers) * indexer_params),
        linear_mixers=sum(layer.kind is LayerKind.LINEAR for layer in layers) * kda,
        draft_attention=mla_params(text) + indexer_params,
        vision=weights.vision_tower(vision) if vision else 0,
    )
