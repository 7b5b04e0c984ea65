"""deepseek_v3: every layer is MLA; one cached latent row per token per layer.

The row holds the `kv_lora_rank` latent plus the decoupled `qk_rope_head_dim` RoPE key
(512 + 64 for DeepSeek-V3); there are no separate K and V. The MTP layers
(`num_nextn_predict_layers`) are recorded as draft layers and left out of the weights.
"""

from __future__ import annotations

from kvledger.model import weights
from kvledger.model.arch import AttnKind, Family, LayerKind, LayerSpec, MlaShape, ModelArch
from kvledger.model.context import context_tokens
from kvledger.model.families.mlp import deepseek_mlp_plan
from kvledger.model.params import ParamCounts
from kvledger.model.reader import ConfigReader


def mla_shape(text: ConfigReader) -> MlaShape:
    return MlaShape(
        kv_lora_rank=text.int("kv_lora_rank", minimum=1),
        qk_rope_head_dim=text.int("qk_rope_head_dim", minimum=0),
    )


def mla_params(text: ConfigReader) -> int:
    return weights.mla_attention(
        hidden=text.int("hidden_size", minimum=1),
        heads=text.int("num_attention_heads", minimum=1),
        q_lora_rank=text.int("q_lora_rank", None, minimum=1),
        kv_lora_rank=text.int("kv_lora_rank", minimum=1),
        qk_nope_head_dim=text.int("qk_nope_head_dim", minimum=0),
        qk_rope_head_dim=text.int("qk_rope_head_dim", minimum=0),
        v_head_dim=text.int("v_head_dim", minimum=1),
    )


def mla_param_counts(text: ConfigReader, num_layers: int, *, attention: int, linear_mixers: int = 0,
                     draft_attention: int, vision: int = 0) -> ParamCounts:
    """ParamCounts of a DeepSeek-style decoder (MTP layers: attention + the MoE block +
    eh_proj, `num_nextn_predict_layers` of them)."""
    plan = deepseek_mlp_plan(text, num_layers)
    embed, head = weights.embedding_parts(text)
    drafts = text.int("num_nextn_predict_layers", 0, minimum=0)
    hidden = text.int("hidden_size", minimum=1)
    return ParamCounts(
        embedding=embed, lm_head=head, attention=attention, linear_mixers=linear_mixers,
        mlp=plan.total_params(num_layers) - plan.expert_total, experts=plan.expert_total,
        vision=vision, draft_layers=drafts, draft_attention=drafts * draft_attention,
        draft_ffn=drafts * (plan.draft_ffn_params + weights.mtp_projection(hidden)),
    )


def read(root: ConfigReader, name: str) -> ModelArch:
    num_layers = root.int("num_hidden_layers", minimum=1)
    params = mla_param_counts(root, num_layers, attention=num_layers * mla_params(root),
                              draft_attention=mla_params(root))
    return ModelArch(
        name=name,
        source=root.source,
        family=Family.DEEPSEEK_V3,
        model_type=root.str("model_type"),
        layers=tuple(LayerSpec(index=i, kind=LayerKind.FULL) for i in range(num_layers)),
        attn=AttnKind.MLA,
        mla=mla_shape(root),
        num_draft_layers=root.int("num_nextn_predict_layers", 0, minimum=0),
        max_context_tokens=context_tokens(root),
        num_params=params.total,
        params=params,
        quant=weights.quant_method(root),
        weight_bytes_per_param=weights.bytes_per_param(root),
    )
