"""kimi_k3: Kimi-K3, a multimodal wrapper whose `text_config` is a Kimi-Linear decoder.

SGLang serves it with its native model class (models/kimi_k3.py), whose language model is
the Kimi-Linear stack: KDA linear-attention layers and MLA full-attention layers, listed
1-based in `linear_attn_config` (24 full + 69 KDA of 93 for Kimi-K3). The cache ledgers are
Kimi-Linear's, read from `text_config`; the vision section makes it multimodal. Its
`compressed-tensors` mxfp4 scheme (routed experts only; attention, shared experts, dense MLPs,
lm_head and the vision tower in its ignore list) is recorded.

Weights, as models/kimi_k3.py builds them (norms, biases, A_log and dt_bias left out):
- KDA (KimiK3DeltaAttention, over attn_tp): q, k, v and o_proj, b_proj (beta), the low-rank
  forget gate f_a/f_b, the output gate g_proj (full rank with `use_full_rank_gate`, else
  g_a/g_b) and the q/k/v short convs;
- MLA (KimiK3MLAAttention): DeepSeek's MLA plus, with `mla_use_output_gate`, g_proj
  (hidden → heads·v_head_dim, over attn_tp);
- MoE layers (`i >= first_k_dense_replace and i % moe_layer_freq == 0`, KimiK3MoE): routed
  experts over tp, gated, in the latent width `routed_expert_hidden_size` when set; shared
  experts (num_shared_experts × moe_intermediate_size, gated) over tp; replicated on every
  rank: the router (MoEGate) and the latent `routed_expert_down_proj` / `up_proj`
  (ReplicatedLinear); dense layers: a gated MLP of `intermediate_size` over tp;
- attention residuals (`attn_res_block_size`): two hidden → 1 ReplicatedLinear per layer;
- vision tower (models/kimi_k3_vl.py, MoonViT3d + PatchMergerMLPV2): plain nn.Linear, so
  replicated: per layer wqkv (hidden → 3·qkv_hidden_size), wo, fc0/fc1; the patch embedding;
  the projector (merged² + merged × text hidden). Its sizes are read from `vt_hidden_size`,
  `vt_num_hidden_layers`, `vt_intermediate_size`, `merge_kernel_size`; when the vision config
  does not give them the weights are not estimated (--gpu then needs --weights-gib).
"""

from __future__ import annotations

from dataclasses import replace

from kvledger.model import weights
from kvledger.model.arch import Family, ModelArch
from kvledger.model.families.deepseek_v3 import mla_params
from kvledger.model.families.kda import kda_layer_ids
from kvledger.model.families.kimi_linear import read as read_kimi_linear
from kvledger.model.params import ParamCounts
from kvledger.model.reader import ConfigReader


def read(root: ConfigReader, name: str) -> ModelArch:
    text = root.text_config()
    if text is root:
        raise root.error("text_config", "is missing (Kimi-K3 nests its decoder there)")
    vision = root.optional_section("vision_config")
    arch = read_kimi_linear(text, name)
    params = k3_params(text, vision)
    return replace(
        arch, source=root.source, family=Family.KIMI_K3, model_type=root.str("model_type"),
        is_multimodal=vision is not None,
        vit_shape=weights.moonvit_shape(vision) if vision else None,
        num_params=None if params is None else params.total, params=params,
        quant=weights.quant_method(root),
    )


def k3_params(text: ConfigReader, vision: ConfigReader | None) -> ParamCounts | None:
    """Weights by part; None when the vision config lacks the sizes of its tower."""
    vision_params = 0 if vision is None else moonvit_params(vision, text)
    if vision_params is None:
        return None
    hidden = text.int("hidden_size", minimum=1)
    num_layers = text.int("num_hidden_layers", minimum=1)
    kda_ids = kda_layer_ids(text.section("linear_attn_config"), num_layers)
    moe_ids = _moe_layers(text, num_layers)
    mla = mla_params(text)
    if text.bool("mla_use_output_gate", False):
        mla += (hidden  # g_proj: hidden → heads · v_head_dim
                * text.int("num_attention_heads", minimum=1) * text.int("v_head_dim", minimum=1))
    num_experts = text.int("num_experts", minimum=1) if moe_ids else 0
    inter = text.int("moe_intermediate_size", minimum=1) if moe_ids else 0
    latent = text.int("routed_expert_hidden_size", None, minimum=1)
    width = latent or hidden  # the routed experts' hidden width
    shared = text.int("num_shared_experts", 0, minimum=0) * inter
    dense = num_layers - len(moe_ids)
    embedding, lm_head = weights.embedding_parts(text)
    return ParamCounts(
        embedding=embedding,
        lm_head=lm_head,
        attention=(num_layers - len(kda_ids)) * mla,
        linear_mixers=len(kda_ids) * k3_kda_params(text),
        mlp=(dense * weights.mlp(hidden=hidden,
                                 intermediate=text.int("intermediate_size", minimum=1))
             + len(moe_ids) * weights.mlp(hidden=hidden, intermediate=shared)),
        experts=len(moe_ids) * num_experts * weights.mlp(hidden=width, intermediate=inter),
        vision=0,
        replicated=(len(moe_ids) * (
            hidden * num_experts  # router (MoEGate)
            + (2 * hidden * latent if latent else 0))  # latent down + up projections
            + (num_layers * 2 * hidden if text.has("attn_res_block_size") else 0)
            + vision_params),
    )


def k3_kda_params(text: ConfigReader) -> int:
    linear = text.section("linear_attn_config")
    hidden = text.int("hidden_size", minimum=1)
    heads = linear.int("num_heads", minimum=1)
    head_dim = linear.int("head_dim", minimum=1)
    proj = heads * head_dim
    gate = (hidden * proj if linear.bool("use_full_rank_gate", False)  # g_proj
            else hidden * head_dim + head_dim * proj)  # g_a, g_b
    return (
        3 * hidden * proj  # q, k, v
        + hidden * heads  # b_proj (beta)
        + hidden * head_dim + head_dim * proj  # forget gate f_a, f_b
        + gate
        + 3 * proj * linear.int("short_conv_kernel_size", minimum=2)  # q, k, v short convs
        + proj * hidden  # o_proj
    )


def moonvit_params(vision: ConfigReader, text: ConfigReader) -> int | None:
    sizes = ("vt_hidden_size", "vt_num_hidden_layers", "vt_intermediate_size", "patch_size",
             "merge_kernel_size")
    if not all(vision.has(key) for key in sizes):
        return None
    hidden = vision.int("vt_hidden_size", minimum=1)
    qkv = vision.int("qkv_hidden_size", hidden, minimum=1)
    mlp = vision.int("vt_intermediate_size", minimum=1)
    patch = vision.int("patch_size", minimum=1)
    kernel = vision.int_list("merge_kernel_size")
    if len(kernel) != 2:
        raise vision.error("merge_kernel_size", f"is {kernel} (expected [height, width])")
    merge_h, merge_w = kernel
    merged = vision.int("mm_hidden_size", hidden, minimum=1) * merge_h * merge_w
    return (
        vision.int("vt_num_hidden_layers", minimum=0)
        * (hidden * 3 * qkv + qkv * hidden + 2 * hidden * mlp)  # wqkv, wo, fc0, fc1
        + 3 * patch * patch * hidden  # patch embedding (Conv2d over RGB)
        + merged * merged  # projector proj.0
        + merged * vision.int("text_hidden_size", text.int("hidden_size", minimum=1),
                              minimum=1)  # projector proj.2
    )


def _moe_layers(text: ConfigReader, num_layers: int) -> list[int]:
    """KimiK3DecoderLayer._is_moe_layer: past the dense prefix and on the MoE cadence."""
    if not text.has("num_experts"):
        return []
    first = text.int("first_k_dense_replace", 0, minimum=0)
    freq = text.int("moe_layer_freq", 1, minimum=1)
    return [i for i in range(num_layers) if i >= first and i % freq == 0]
