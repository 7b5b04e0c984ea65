"""llama (and every dense GQA decoder shaped like it): all layers are full attention.

Sliding-window layers are not modelled, so a config that turns them on is refused rather than
accounted as full attention.
"""

from __future__ import annotations

from kvledger.model import weights
from kvledger.model.arch import AttnKind, Family, LayerKind, LayerSpec, ModelArch
from kvledger.model.context import context_tokens
from kvledger.model.families.gqa import gqa_params, gqa_shape
from kvledger.model.params import ParamCounts
from kvledger.model.reader import ConfigReader


def read_dense(root: ConfigReader, name: str, family: Family) -> ModelArch:
    num_layers = root.int("num_hidden_layers", minimum=1)
    if root.bool("use_sliding_window", False):
        raise root.error(
            "use_sliding_window", "is true (sliding-window attention is not supported)"
        )
    gqa = gqa_shape(root)
    hidden = root.int("hidden_size", minimum=1)
    embed, head = weights.embedding_parts(root)
    params = ParamCounts(
        embedding=embed, lm_head=head, attention=num_layers * gqa_params(root, gqa),
        linear_mixers=0, experts=0, vision=0,
        mlp=num_layers * weights.mlp(hidden=hidden,
                                     intermediate=root.int("intermediate_size", minimum=1)),
    )
    return ModelArch(
        name=name,
        source=root.source,
        family=family,
        model_type=root.str("model_type"),
        layers=tuple(LayerSpec(index=i, kind=LayerKind.FULL) for i in range(num_layers)),
        attn=AttnKind.GQA,
        gqa=gqa,
        max_context_tokens=context_tokens(root),
        num_params=params.total,
        params=params,
        quant=weights.quant_method(root),
        weight_bytes_per_param=weights.bytes_per_param(root),
    )


def read(root: ConfigReader, name: str) -> ModelArch:
    return read_dense(root, name, Family.LLAMA)
