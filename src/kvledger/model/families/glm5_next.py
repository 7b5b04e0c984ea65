"""glm5_next (GLM-5.3-Flash): KDA linear layers + NoPE DSA layers with a pooled indexer.

The checkpoint is a multimodal wrapper: cache fields live under `text_config`, and the
presence of `vision_config` makes SGLang treat the model as multimodal.
"""

from __future__ import annotations

from kvledger.model.arch import (
    AttnKind,
    Family,
    IndexerShape,
    LayerKind,
    LayerSpec,
    MlaShape,
    ModelArch,
)
from kvledger.model.families.kda import kda_state
from kvledger.model.reader import ConfigReader

FULL_TYPES = {"deepseek_sparse_attention", "full_attention"}
LINEAR_TYPES = {"linear_attention"}


def read(root: ConfigReader, name: str) -> ModelArch:
    text = root.section("text_config")
    num_layers = text.int("num_hidden_layers", minimum=1)
    linear = text.section("linear_attn_config")
    kda_layers = set(linear.int_list("kda_layers"))
    layer_types = text.str_list("layer_types")
    if len(layer_types) != num_layers:
        raise text.error(
            "layer_types", f"has {len(layer_types)} entries (expected num_hidden_layers={num_layers})"
        )
    indexer_types = text.str_list("indexer_types", ["full"] * num_layers)
    if len(indexer_types) != num_layers:
        raise text.error("indexer_types", f"has {len(indexer_types)} entries (expected {num_layers})")
    layers = []
    for i, kind in enumerate(layer_types):
        if kind in LINEAR_TYPES:
            if i not in kda_layers:
                raise linear.error("kda_layers", f"lacks layer {i}, which layer_types calls linear")
            layers.append(LayerSpec(index=i, kind=LayerKind.LINEAR))
        elif kind in FULL_TYPES:
            if i in kda_layers:
                raise linear.error("kda_layers", f"lists layer {i}, which layer_types calls {kind}")
            if indexer_types[i] not in ("full", "shared"):
                raise text.error(f"indexer_types[{i}]", f"is {indexer_types[i]!r} (expected 'full' or 'shared')")
            layers.append(
                LayerSpec(index=i, kind=LayerKind.FULL, has_indexer=indexer_types[i] == "full")
            )
        else:
            raise text.error(f"layer_types[{i}]", f"is {kind!r} (expected one of {sorted(FULL_TYPES | LINEAR_TYPES)})")
    kpool = text.int("index_kpool", 1, minimum=1) if text.bool("index_kpool_compress", False) else 1
    return ModelArch(
        name=name,
        source=root.source,
        family=Family.GLM5_NEXT,
        model_type=root.str("model_type"),
        layers=tuple(layers),
        attn=AttnKind.DSA,
        mla=MlaShape(
            kv_lora_rank=text.int("kv_lora_rank", minimum=1),
            qk_rope_head_dim=text.int("qk_rope_head_dim", minimum=0),
        ),
        indexer=IndexerShape(
            head_dim=text.int("index_head_dim", minimum=1),
            n_heads=text.int("index_n_heads", minimum=1),
            topk=text.int("index_topk", minimum=1),
            kpool=kpool,
        ),
        state=kda_state(linear),
        num_draft_layers=text.int("num_nextn_predict_layers", 0, minimum=0),
        is_multimodal=root.has("vision_config"),
        max_context_tokens=text.int("max_position_embeddings", minimum=1),
        weight_bytes_per_param=1.0 if root.has("quantization_config") else 2.0,
    )
