"""kimi_linear (Kimi-Linear): KDA linear layers + MLA layers that cache a RoPE part.

`linear_attn_config.kda_layers` / `full_attn_layers` are 1-based in Kimi-Linear's checkpoint
(see `kda.kda_layer_ids`). The MLA row is `kv_lora_rank` + `qk_rope_head_dim` (512 + 64):
with `mla_use_nope` the RoPE rotation is skipped, but SGLang's MLA pool still stores the
`qk_rope_head_dim` part of every row. The context length comes from `model_max_length`.
"""

from __future__ import annotations

from kvledger.model import weights
from kvledger.model.arch import AttnKind, Family, LayerKind, LayerSpec, ModelArch
from kvledger.model.context import context_tokens
from kvledger.model.families.deepseek_v3 import mla_param_counts, mla_params, mla_shape
from kvledger.model.families.kda import kda_layer_ids, kda_state
from kvledger.model.reader import ConfigReader


def read(root: ConfigReader, name: str) -> ModelArch:
    num_layers = root.int("num_hidden_layers", minimum=1)
    linear = root.section("linear_attn_config")
    kda_ids = kda_layer_ids(linear, num_layers)
    layers = tuple(
        LayerSpec(index=i, kind=LayerKind.LINEAR if i in kda_ids else LayerKind.FULL)
        for i in range(num_layers)
    )
    kda = weights.kda_mixer(
        hidden=root.int("hidden_size", minimum=1),
        heads=linear.int("num_heads", minimum=1),
        head_dim=linear.int("head_dim", minimum=1),
        conv_kernel=linear.int("short_conv_kernel_size", minimum=2),
    )
    params = mla_param_counts(root, num_layers,
                              attention=(num_layers - len(kda_ids)) * mla_params(root),
                              linear_mixers=len(kda_ids) * kda, draft_attention=mla_params(root))
    return ModelArch(
        name=name,
        source=root.source,
        family=Family.KIMI_LINEAR,
        model_type=root.str("model_type"),
        layers=layers,
        attn=AttnKind.MLA,
        mla=mla_shape(root),
        state=kda_state(linear),
        num_draft_layers=root.int("num_nextn_predict_layers", 0, minimum=0),
        max_context_tokens=context_tokens(root),
        num_params=params.total,
        params=params,
        quant=weights.quant_method(root),
        weight_bytes_per_param=weights.bytes_per_param(root),
    )
