"""ModelArch: what a model's config says about its cache, independent of any deployment.

Assumptions:
1. Every cache-relevant decoder layer is FULL (leaves one cached row per token), LINEAR (keeps
   a fixed-size recurrent state per request and caches nothing per token), or both: a layer
   that runs attention and a Mamba2 mixer in parallel (Falcon-H1) appears twice in `layers`,
   once FULL and once LINEAR, with the same index, which is how SGLang lists it (its
   `full_attention_layer_ids` and `linear_layer_ids` are both `range(num_hidden_layers)`).
   Layers that cache nothing (Nemotron-H MLP and MoE layers) are absent from `layers` but keep
   their place in the numbering and are counted by `num_layers`.
2. All FULL layers of a model share one attention kind (GQA, MLA or DSA); whether a DSA layer
   owns an indexer is per layer (GLM-5.x "shared" indexer layers own none).
3. All LINEAR layers of a model share one state shape.
4. Shapes are unsharded here; `StateShape.conv_shape(attn_tp)` and friends shard them.

Dtypes are not part of the architecture: they come from the deployment, except where a config
pins the state dtype (`mamba_ssm_dtype`), which is recorded as a default.

>>> g = HeadGroup(name="q", num_heads=64, head_dim=128)
>>> s = StateShape(kind=LinearKind.KDA, conv_kernel=4, conv_groups=(g, g, g),
...                temporal_heads=64, temporal_dims=(128, 128))
>>> s.conv_shape(attn_tp=1), s.temporal_shape(attn_tp=1)
((3, 24576), (64, 128, 128))
>>> s.conv_shape(attn_tp=8)
(3, 3072)
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from kvledger.model.params import ParamCounts
from kvledger.model.quant import QuantMethod


class ModelError(ValueError):
    """A config that cannot be turned into an architecture; the message names file and field."""


class ShardingError(ValueError):
    """A head count that the attention-TP size does not divide."""


class LayerKind(Enum):
    FULL = "full"  # one cached row per token
    LINEAR = "linear"  # one state per request, nothing per token


class AttnKind(Enum):
    GQA = "gqa"  # K and V rows per kv head
    MLA = "mla"  # one compressed latent row (+ RoPE part)
    DSA = "dsa"  # MLA latent plus an indexer key (DeepSeek sparse attention)


class LinearKind(Enum):
    KDA = "kda"  # Kimi delta attention
    GDN = "gdn"  # Gated DeltaNet
    MAMBA2 = "mamba2"
    MAMBA1 = "mamba1"  # Jamba: one state per channel, no heads


class Family(Enum):
    GLM5_NEXT = "glm5_next"
    KIMI_LINEAR = "kimi_linear"
    KIMI_K3 = "kimi_k3"
    QWEN3_NEXT = "qwen3_next"
    QWEN3_5 = "qwen3_5"
    DEEPSEEK_V3 = "deepseek_v3"
    DEEPSEEK_V32 = "deepseek_v32"
    GLM_MOE_DSA = "glm_moe_dsa"
    NEMOTRON_H = "nemotron_h"
    GRANITE_MOE_HYBRID = "granitemoehybrid"
    FALCON_H1 = "falcon_h1"
    JAMBA = "jamba"
    LLAMA = "llama"
    QWEN3 = "qwen3"


@dataclass(frozen=True, slots=True, kw_only=True)
class LayerSpec:
    index: int  # 0-based global decoder-layer id, as SGLang numbers its layers
    kind: LayerKind
    # DSA layers that compute and write their own index keys. SGLang's DSATokenToKVPool still
    # allocates an index-key buffer for every DSA layer (`for _ in range(layer_num)`), so what
    # is reserved and what is written differ for GLM-5.2's "shared" layers.
    has_indexer: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class MlaShape:
    kv_lora_rank: int  # latent width, elements (512 for DeepSeek/GLM/Kimi)
    qk_rope_head_dim: int  # decoupled RoPE key, elements (0 for NoPE models)


@dataclass(frozen=True, slots=True, kw_only=True)
class GqaShape:
    num_kv_heads: int  # unsharded
    head_dim: int  # elements per head
    num_heads: int | None = None  # query heads, unsharded (None: not read)

    def kv_heads_per_rank(self, attn_tp: int) -> int:
        # SGLang replicates KV heads when TP exceeds them: max(1, heads // tp)
        # (ModelConfig.get_num_kv_heads).
        if self.num_kv_heads >= attn_tp and self.num_kv_heads % attn_tp:
            raise ShardingError(
                f"num_key_value_heads={self.num_kv_heads} is not divisible by attn_tp={attn_tp}"
            )
        return max(1, self.num_kv_heads // attn_tp)


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexerShape:
    head_dim: int  # index key width, elements (128)
    n_heads: int  # query heads of the indexer (not cached)
    topk: int  # tokens selected per query
    kpool: int  # tokens pooled into one index key (1 = no pooling)


@dataclass(frozen=True, slots=True, kw_only=True)
class HeadGroup:
    """A slice of the conv input: `num_heads × head_dim` channels, sharded by heads."""

    name: str
    num_heads: int
    head_dim: int
    # Mamba2 B/C groups: when TP does not divide them SGLang replicates them so each rank holds
    # whole groups (extra_groups_for_head_shards in mamba/mamba2 mixer).
    replicate_when_indivisible: bool = False

    def heads_per_rank(self, attn_tp: int) -> int:
        if self.num_heads % attn_tp == 0:
            return self.num_heads // attn_tp
        if self.replicate_when_indivisible and attn_tp % self.num_heads == 0:
            return 1
        raise ShardingError(
            f"{self.name}: {self.num_heads} heads are not divisible by attn_tp={attn_tp}"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class StateShape:
    """Per-layer recurrent state of a linear-attention layer (unsharded).

    conv state:     (conv_kernel − 1, Σ group heads/attn_tp × head_dim)
    temporal state: (temporal_heads/attn_tp, *temporal_dims): (heads, dim, dim) for KDA, GDN
                    and Mamba2; (d_inner, d_state) for Mamba-1, whose heads are channels
    """

    kind: LinearKind
    conv_kernel: int  # K; the conv state keeps the last K − 1 inputs
    conv_groups: tuple[HeadGroup, ...]
    temporal_heads: int
    temporal_dims: tuple[int, ...]
    ssm_dtype_default: str | None = None  # `mamba_ssm_dtype` when the config pins it

    def conv_shape(self, attn_tp: int) -> tuple[int, int]:
        channels = sum(g.heads_per_rank(attn_tp) * g.head_dim for g in self.conv_groups)
        return (self.conv_kernel - 1, channels)

    def temporal_shape(self, attn_tp: int) -> tuple[int, ...]:
        if self.temporal_heads % attn_tp:
            raise ShardingError(
                f"{self.kind.value} state: {self.temporal_heads} heads are not divisible by "
                f"attn_tp={attn_tp}"
            )
        return (self.temporal_heads // attn_tp, *self.temporal_dims)


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelArch:
    name: str  # embedded name, repo id or path the user gave
    source: str  # the config.json it was read from (for error messages)
    family: Family
    model_type: str
    layers: tuple[LayerSpec, ...]
    attn: AttnKind
    mla: MlaShape | None = None
    gqa: GqaShape | None = None
    indexer: IndexerShape | None = None
    state: StateShape | None = None
    num_draft_layers: int = 0  # MTP / nextn layers, allocated only with speculative decoding
    is_multimodal: bool = False  # a vision section makes SGLang reserve a multimodal cache
    vit_shape: tuple[int, int] | None = None  # vision tower (layers, hidden), when multimodal
    params: ParamCounts | None = None  # num_params split by part (None: not itemised)
    quant: QuantMethod | None = None  # the checkpoint's quantization_config
    max_context_tokens: int = 0  # the context length SGLang derives from the config
    num_params: int | None = None  # estimate of the weights, for GPU planning
    weight_bytes_per_param: float = 2.0  # 1.0 for fp8 checkpoints
    # Decoder layers including those that cache nothing (Nemotron-H MLP/MoE layers);
    # None means every decoder layer appears in `layers`.
    num_decoder_layers: int | None = None

    def __post_init__(self) -> None:
        # The token pool, its ledger and capacity divide by the full layers' bytes: a config
        # whose layer pattern leaves none (a Qwen3-Next cut to 3 layers) is refused here.
        if not any(layer.kind is LayerKind.FULL for layer in self.layers):
            raise ModelError(f"{self.source}: no full-attention layer among "
                             f"{len(self.layers)} layers (field 'num_hidden_layers' or the "
                             "layer pattern); kvledger sizes models with at least one")

    @property
    def full_layers(self) -> tuple[LayerSpec, ...]:
        return tuple(layer for layer in self.layers if layer.kind is LayerKind.FULL)

    @property
    def linear_layers(self) -> tuple[LayerSpec, ...]:
        return tuple(layer for layer in self.layers if layer.kind is LayerKind.LINEAR)

    @property
    def num_layers(self) -> int:
        """Decoder layers (a Falcon-H1 layer listed as FULL and LINEAR counts once)."""
        if self.num_decoder_layers is not None:
            return self.num_decoder_layers
        return len({layer.index for layer in self.layers})

    @property
    def num_full_layers(self) -> int:
        return len(self.full_layers)

    @property
    def num_linear_layers(self) -> int:
        return len(self.linear_layers)

    @property
    def num_indexer_layers(self) -> int:
        return sum(layer.has_indexer for layer in self.layers)

    @property
    def is_hybrid(self) -> bool:
        return self.state is not None and self.num_linear_layers > 0

    @property
    def weight_bytes(self) -> int | None:
        if self.num_params is None:
            return None
        return int(self.num_params * self.weight_bytes_per_param)
