"""deepseek_v32: every layer is DSA (MLA latent row + an fp8 index key per token).

Which layers own an indexer follows `dsa.indexer_owners` (all of them unless the config or an
override sets `index_topk_freq` / a pattern). Layers without one carry no indexer weights.
"""

from __future__ import annotations

from kvledger.model import weights
from kvledger.model.arch import AttnKind, Family, LayerKind, LayerSpec, ModelArch
from kvledger.model.context import context_tokens
from kvledger.model.families.deepseek_v3 import mla_param_counts, mla_params, mla_shape
from kvledger.model.families.dsa import indexer_owners, indexer_shape
from kvledger.model.reader import ConfigReader


def read_dsa(root: ConfigReader, name: str, family: Family) -> ModelArch:
    num_layers = root.int("num_hidden_layers", minimum=1)
    owners = indexer_owners(root, num_layers)
    indexer = indexer_shape(root)
    indexer_params = weights.dsa_indexer(
        hidden=root.int("hidden_size", minimum=1),
        q_lora_rank=root.int("q_lora_rank", minimum=1),
        heads=indexer.n_heads,
        head_dim=indexer.head_dim,
    )
    # The MTP layer has its own DSA stack (indexer included).
    params = mla_param_counts(root, num_layers,
                              attention=num_layers * mla_params(root) + sum(owners) * indexer_params,
                              draft_attention=mla_params(root) + indexer_params)
    return ModelArch(
        name=name,
        source=root.source,
        family=family,
        model_type=root.str("model_type"),
        layers=tuple(
            LayerSpec(index=i, kind=LayerKind.FULL, has_indexer=owns)
            for i, owns in enumerate(owners)
        ),
        attn=AttnKind.DSA,
        mla=mla_shape(root),
        indexer=indexer,
        num_draft_layers=root.int("num_nextn_predict_layers", 0, minimum=0),
        max_context_tokens=context_tokens(root),
        num_params=params.total,
        params=params,
        quant=weights.quant_method(root),
        weight_bytes_per_param=weights.bytes_per_param(root),
    )


def read(root: ConfigReader, name: str) -> ModelArch:
    return read_dsa(root, name, Family.DEEPSEEK_V32)
