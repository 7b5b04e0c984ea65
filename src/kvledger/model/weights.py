"""Weight counts from config fields: how many parameters each block of a model holds.

Estimates for GPU planning, not a checkpoint audit. Counted: input embedding and lm_head,
attention projections (GQA, MLA, DSA indexer), linear-attention mixers (KDA, Gated DeltaNet,
Mamba2, including their short-conv weights), dense MLPs, MoE layers (routed experts, shared
experts, router) and a vision tower when the config has one.
Approximations, each well under 1 % of every supported model:
- norms, biases and per-head scalars (A_log, D, dt_bias) are left out;
- MTP draft layers are left out: SGLang loads them only with speculative decoding;
- GLM-5.3's hyper-connection mixers (`mhc`) are left out;
- the vision tower is counted as plain ViT blocks + patch embedding + patch merger.
Bytes per parameter: fp8 checkpoints (`quantization_config.quant_method == "fp8"`) store the
big matrices in 1 B; we use 1.0 for the whole model although embeddings, lm_head and norms
stay bf16 (≈0.5 % of DeepSeek-V3's bytes). Unquantized checkpoints use 2.0 (bf16/fp16).

Llama-3.1-8B (untied, 32 layers):
>>> per_layer = gqa_attention(hidden=4096, heads=32, kv_heads=8, head_dim=128) + mlp(
...     hidden=4096, intermediate=14336)
>>> embedding(vocab=128256, hidden=4096, tied=False) + 32 * per_layer
8029995008
"""

from __future__ import annotations

from kvledger.model.quant import QuantMethod
from kvledger.model.reader import ConfigReader

UNQUANTIZED_BYTES_PER_PARAM = 2.0  # bf16 / fp16


def embedding(*, vocab: int, hidden: int, tied: bool) -> int:
    return (
        vocab
        * hidden  # input embedding
        * (1 if tied else 2)  # lm_head shares it or has its own
    )


def embedding_of(text: ConfigReader, *, tied: bool | None = None) -> int:
    """`embedding` from a text config; `tied` overrides its `tie_word_embeddings`."""
    return embedding(
        vocab=text.int("vocab_size", minimum=1),
        hidden=text.int("hidden_size", minimum=1),
        tied=text.bool("tie_word_embeddings", False) if tied is None else tied,
    )


def embedding_parts(text: ConfigReader, *, tied: bool | None = None) -> tuple[int, int]:
    """(input embedding, lm_head) parameters; lm_head is 0 when tied."""
    vocab, hidden = text.int("vocab_size", minimum=1), text.int("hidden_size", minimum=1)
    tied = text.bool("tie_word_embeddings", False) if tied is None else tied
    return vocab * hidden, 0 if tied else vocab * hidden


def mtp_projection(hidden: int) -> int:
    """An MTP layer's input projection (eh_proj / fc: 2·hidden → hidden)."""
    return 2 * hidden * hidden


def gqa_attention(
    *, hidden: int, heads: int, kv_heads: int, head_dim: int, gated_q: bool = False
) -> int:
    return (
        hidden * heads * head_dim * (2 if gated_q else 1)  # q_proj (+ output gate, Qwen3-Next)
        + 2 * hidden * kv_heads * head_dim  # k_proj + v_proj
        + heads * head_dim * hidden  # o_proj
    )


def mla_attention(
    *,
    hidden: int,
    heads: int,
    q_lora_rank: int | None,
    kv_lora_rank: int,
    qk_nope_head_dim: int,
    qk_rope_head_dim: int,
    v_head_dim: int,
) -> int:
    qk_head_dim = qk_nope_head_dim + qk_rope_head_dim
    if q_lora_rank:
        q = hidden * q_lora_rank + q_lora_rank * heads * qk_head_dim  # q_a_proj + q_b_proj
    else:
        q = hidden * heads * qk_head_dim  # q_proj
    return (
        q
        + hidden * (kv_lora_rank + qk_rope_head_dim)  # kv_a_proj_with_mqa
        + kv_lora_rank * heads * (qk_nope_head_dim + v_head_dim)  # kv_b_proj
        + heads * v_head_dim * hidden  # o_proj
    )


def dsa_indexer(*, hidden: int, q_lora_rank: int, heads: int, head_dim: int) -> int:
    return (
        q_lora_rank * heads * head_dim  # wq_b
        + hidden * head_dim  # wk
        + hidden * heads  # weights_proj
    )


def mlp(*, hidden: int, intermediate: int, gated: bool = True) -> int:
    return (
        (3 if gated else 2)  # gate + up + down, or up + down (Nemotron-H relu²)
        * hidden
        * intermediate
    )


def moe(
    *,
    hidden: int,
    num_experts: int,
    expert_intermediate: int,
    shared_intermediate: int,
    gated: bool = True,
) -> int:
    return (
        num_experts * mlp(hidden=hidden, intermediate=expert_intermediate, gated=gated)
        + mlp(hidden=hidden, intermediate=shared_intermediate, gated=gated)  # shared experts
        + hidden * num_experts  # router
    )


def kda_mixer(*, hidden: int, heads: int, head_dim: int, conv_kernel: int) -> int:
    proj = heads * head_dim
    return (
        3 * hidden * proj  # q_proj, k_proj, v_proj
        + 3 * proj * conv_kernel  # q, k, v short convs (depthwise)
        + 2 * (hidden * head_dim + head_dim * proj)  # f_a/f_b and g_a/g_b low-rank gates
        + hidden * heads  # b_proj (beta)
        + proj * hidden  # o_proj
    )


def gdn_mixer(
    *, hidden: int, k_heads: int, k_dim: int, v_heads: int, v_dim: int, conv_kernel: int
) -> int:
    key_dim, value_dim = k_heads * k_dim, v_heads * v_dim
    return (
        hidden * (2 * key_dim + 2 * value_dim)  # in_proj_qkvz
        + hidden * 2 * v_heads  # in_proj_ba
        + (2 * key_dim + value_dim) * conv_kernel  # short conv over q, k, v
        + value_dim * hidden  # out_proj
    )


def mamba2_mixer(
    *, hidden: int, heads: int, head_dim: int, groups: int, d_state: int, conv_kernel: int
) -> int:
    inner = heads * head_dim
    conv_dim = inner + 2 * groups * d_state  # x, B, C
    return (
        hidden * (inner + conv_dim + heads)  # in_proj: z, xBC, dt
        + conv_dim * conv_kernel  # conv1d (depthwise)
        + inner * hidden  # out_proj
    )


def vit_shape(vision: ConfigReader) -> tuple[int, int]:
    """(layers, hidden) of a vision tower as SGLang's `adjust_mem_fraction_for_vlm`
    (arg_groups/memory_hook.py, 0.5.21 and 0.5.23) reads them: `getattr(vision_config,
    "num_hidden_layers", 24)` and `getattr(vision_config, "hidden_size", 1024)`.

    The Qwen3.5 and GLM-5.3 vision configs (sglang/srt/configs/qwen3_5.py
    `Qwen3_5VisionConfig` over transformers' Qwen3VLVisionConfig, glm5_next.py
    `Glm5NextVisionConfig`) name the depth `depth` and alias nothing to `num_hidden_layers`,
    so SGLang counts 24 layers whatever `depth` says: Qwen3.5-35B-A3B's 27 × 1152² tower
    scores 24 · 1152² / (24 · 1024²) = 1.2656, not 1.4238.

    >>> vit_shape(ConfigReader({"depth": 27, "hidden_size": 1152}, "config.json"))
    (24, 1152)
    """
    return (vision.int("num_hidden_layers", 24, minimum=0),
            vision.int("hidden_size", 1024, minimum=1))


def moonvit_shape(vision: ConfigReader) -> tuple[int, int]:
    """The same for Kimi-K3's MoonViT: sglang/srt/configs/kimi_k3.py `KimiK3VisionConfig`
    sets `num_hidden_layers = vt_num_hidden_layers` (default 27) and `hidden_size =
    vt_hidden_size` (default 1024), whatever the config's own `num_hidden_layers` says.

    >>> moonvit_shape(ConfigReader({"vt_hidden_size": 1152}, "config.json"))
    (27, 1152)
    """
    return (vision.int("vt_num_hidden_layers", 27, minimum=0),
            vision.int("vt_hidden_size", 1024, minimum=1))


def vision_tower(vision: ConfigReader) -> int:
    hidden = vision.int("hidden_size", minimum=1)
    patch = vision.int("patch_size", minimum=1)
    merged = hidden * vision.int("spatial_merge_size", 1, minimum=1) ** 2
    return (
        vision.int("depth", minimum=0)
        * (
            4 * hidden * hidden
            + mlp(
                hidden=hidden, intermediate=vision.int("intermediate_size", minimum=1), gated=False
            )
        )  # qkv + proj, fc1 + fc2
        + vision.int("in_channels", 3, minimum=1)
        * vision.int("temporal_patch_size", 1, minimum=1)
        * patch
        * patch
        * hidden  # patch embedding
        + merged * merged  # merger fc1
        + merged * vision.int("out_hidden_size", hidden, minimum=1)  # merger fc2
    )


def quant_method(root: ConfigReader) -> QuantMethod | None:
    """The checkpoint's `quantization_config.quant_method` (top level or text_config)."""
    text = root.text_config()
    quant = root.optional_section("quantization_config") or text.optional_section(
        "quantization_config"
    )
    if quant is None:
        return None
    method = quant.str("quant_method")
    try:
        return QuantMethod.from_config(
            method, quant.str(quant.pick("quant_algo", "format"), None))
    except ValueError:
        raise quant.error(
            "quant_method",
            f"is {method!r} (expected one of {', '.join(m.value for m in QuantMethod)}, or no "
            "quantization_config for bf16 weights)",
        ) from None


def bytes_per_param(root: ConfigReader) -> float:
    """One storage width for the whole checkpoint (families that do not itemise)."""
    method = quant_method(root)
    return UNQUANTIZED_BYTES_PER_PARAM if method is None else method.linear_bytes
