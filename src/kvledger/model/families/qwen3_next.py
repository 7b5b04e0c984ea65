"""qwen3_next (Qwen3-Next): Gated DeltaNet linear layers + gated GQA full layers.

Layer kinds: SGLang's Qwen3NextConfig.layers_block_type makes layer i full iff
(i + 1) % full_attention_interval == 0; transformers reads `layer_types`. A config may carry
either or both; when both, they must agree.

GDN state (SGLang's Qwen3NextConfig.mamba2_cache_params → Mamba2StateShape.create with
n_groups = k_heads, num_heads = v_heads, head_dim = v_dim, state_size = k_dim):
- conv: the last K − 1 inputs of the short conv over q, k and v,
  `2·k_heads·k_dim + v_heads·v_dim` channels, each sub-block sharded by heads;
- temporal: (v_heads / tp, v_dim, k_dim), SGLang's order (the same bytes as k_dim × v_dim).
The full layers' attention has an output gate (`attn_output_gate`, on by default), which
doubles q_proj's weights but not the cache.
"""

from __future__ import annotations

from kvledger.model import weights
from kvledger.model.arch import (
    AttnKind,
    Family,
    HeadGroup,
    LayerKind,
    LayerSpec,
    LinearKind,
    ModelArch,
    StateShape,
)
from kvledger.model.context import context_tokens
from kvledger.model.families.gqa import gqa_params, gqa_shape
from kvledger.model.families.mamba2 import pinned_ssm_dtype
from kvledger.model.families.mlp import qwen_mlp_plan
from kvledger.model.params import ParamCounts
from kvledger.model.reader import ConfigReader

LAYER_TYPES = {"linear_attention": LayerKind.LINEAR, "full_attention": LayerKind.FULL}


def gdn_layer_kinds(text: ConfigReader, num_layers: int) -> tuple[LayerKind, ...]:
    by_interval = None
    if text.has("full_attention_interval") or not text.has("layer_types"):
        interval = text.int("full_attention_interval", minimum=1)
        by_interval = tuple(
            LayerKind.FULL if (i + 1) % interval == 0 else LayerKind.LINEAR
            for i in range(num_layers)
        )
    if not text.has("layer_types"):
        assert by_interval is not None
        return by_interval
    names = text.str_list("layer_types")
    if len(names) != num_layers:
        raise text.error(
            "layer_types", f"has {len(names)} entries (expected num_hidden_layers={num_layers})"
        )
    for i, kind in enumerate(names):
        if kind not in LAYER_TYPES:
            raise text.error(
                f"layer_types[{i}]", f"is {kind!r} (expected one of {sorted(LAYER_TYPES)})"
            )
    kinds = tuple(LAYER_TYPES[kind] for kind in names)
    if by_interval is not None and kinds != by_interval:
        i = next(i for i in range(num_layers) if kinds[i] != by_interval[i])
        raise text.error(
            "layer_types",
            f"says layer {i} is {names[i]} but full_attention_interval="
            f"{text.int('full_attention_interval')} makes it {by_interval[i].value} "
            "(expected them to agree)",
        )
    return kinds


def gdn_state(text: ConfigReader) -> StateShape:
    k_heads = text.int("linear_num_key_heads", minimum=1)
    v_heads = text.int("linear_num_value_heads", minimum=1)
    if v_heads % k_heads:
        raise text.error(
            "linear_num_value_heads",
            f"is {v_heads} (expected a multiple of linear_num_key_heads={k_heads})",
        )
    k_dim = text.int("linear_key_head_dim", minimum=1)
    v_dim = text.int("linear_value_head_dim", minimum=1)
    return StateShape(
        kind=LinearKind.GDN,
        conv_kernel=text.int("linear_conv_kernel_dim", minimum=2),
        conv_groups=(
            HeadGroup(name="q", num_heads=k_heads, head_dim=k_dim),
            HeadGroup(name="k", num_heads=k_heads, head_dim=k_dim),
            HeadGroup(name="v", num_heads=v_heads, head_dim=v_dim),
        ),
        temporal_heads=v_heads,
        temporal_dims=(v_dim, k_dim),
        ssm_dtype_default=pinned_ssm_dtype(text),
    )


def read_gdn(root: ConfigReader, name: str, family: Family) -> ModelArch:
    text = root.text_config()
    num_layers = text.int("num_hidden_layers", minimum=1)
    kinds = gdn_layer_kinds(text, num_layers)
    state = gdn_state(text)
    gqa = gqa_shape(text)
    num_full = kinds.count(LayerKind.FULL)
    vision = root.optional_section("vision_config")
    embed, head = weights.embedding_parts(
        text, tied=root.bool("tie_word_embeddings", text.bool("tie_word_embeddings", False)))
    attention = gqa_params(text, gqa, gated_q=text.bool("attn_output_gate", True))
    plan = qwen_mlp_plan(text, num_layers)
    drafts = text.int(text.pick("mtp_num_hidden_layers", "num_nextn_predict_layers"), 0, minimum=0)
    params = ParamCounts(
        embedding=embed, lm_head=head, attention=num_full * attention,
        linear_mixers=(num_layers - num_full) * _gdn_params(text),
        mlp=plan.total_params(num_layers) - plan.expert_total, experts=plan.expert_total,
        vision=weights.vision_tower(vision) if vision else 0,
        # Qwen3-Next's MTP layer: a full-attention decoder layer with the MoE block, plus fc
        draft_layers=drafts, draft_attention=drafts * attention,
        draft_ffn=drafts * (plan.draft_ffn_params
                            + weights.mtp_projection(text.int("hidden_size", minimum=1))),
    )
    return ModelArch(
        name=name,
        source=root.source,
        family=family,
        model_type=root.str("model_type"),
        layers=tuple(LayerSpec(index=i, kind=kind) for i, kind in enumerate(kinds)),
        attn=AttnKind.GQA,
        gqa=gqa,
        state=state,
        num_draft_layers=drafts,
        is_multimodal=vision is not None,
        vit_shape=weights.vit_shape(vision) if vision else None,
        max_context_tokens=context_tokens(text),
        num_params=params.total,
        params=params,
        quant=weights.quant_method(root),
        weight_bytes_per_param=weights.bytes_per_param(root),
    )


def _gdn_params(text: ConfigReader) -> int:
    return weights.gdn_mixer(
        hidden=text.int("hidden_size", minimum=1),
        k_heads=text.int("linear_num_key_heads", minimum=1),
        k_dim=text.int("linear_key_head_dim", minimum=1),
        v_heads=text.int("linear_num_value_heads", minimum=1),
        v_dim=text.int("linear_value_head_dim", minimum=1),
        conv_kernel=text.int("linear_conv_kernel_dim", minimum=2),
    )


def read(root: ConfigReader, name: str) -> ModelArch:
    return read_gdn(root, name, Family.QWEN3_NEXT)
