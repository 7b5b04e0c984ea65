"""TinyConfig: a GLM-5.3-Flash-shaped model small enough to run on a CPU in milliseconds.

The cache anatomy is the real model's, the sizes are not:

=====================  ==========================  ===========================
what                   GLM-5.3-Flash               TinyConfig default
=====================  ==========================  ===========================
layers                 45, DSA at 3, 7, …, 43      8, DSA at 3 and 7
KDA heads × head dim   64 × 128, conv kernel 4     2 × 16, conv kernel 4
MLA latent             512 (NoPE), fp8 scaled 528  128 (NoPE), fp8 scaled 132
indexer                head dim 128, kpool 4       head dim 128, kpool 4
index top-k            2048 tokens                 16 tokens (so selection bites)
=====================  ==========================  ===========================

kv_lora_rank 128 keeps one fp8 scale per row (the per-128 scale exists); index_head_dim 128
is the real one. The specs this config hands to the pools are the same frozen specs the
ledgers use, so the tiny model's bytes follow the same formulas.

>>> cfg = TinyConfig()
>>> [kind.value for kind in cfg.layer_kinds]
['linear', 'linear', 'linear', 'full', 'linear', 'linear', 'linear', 'full']
>>> cfg.latent_spec.row_bytes, cfg.index_spec(page_tokens=16).row_bytes, cfg.conv_channels
(132, 132, 96)
>>> cfg.state_spec.conv_shape, cfg.state_spec.temporal_shape, cfg.state_spec.bytes_per_layer
((3, 96), (2, 16, 16), 2624)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from kvledger.model.arch import LayerKind
from kvledger.sglang.deploy import StateDtype
from kvledger.sglang.specs import FP8_SCALE_GROUP, IndexKeySpec, LatentRowSpec, RowLayout, StateSpec

CONV_DTYPE = torch.bfloat16  # SGLang keeps the conv state in the model dtype (bf16)
TAIL_DTYPE = torch.bfloat16  # compress-tail keys and scores are bf16 buffers
STATE_TORCH_DTYPES = {
    StateDtype.FLOAT32: torch.float32,
    StateDtype.BFLOAT16: torch.bfloat16,
    StateDtype.FLOAT16: torch.float16,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class TinyConfig:
    vocab_size: int = 256  # byte-sized vocabulary
    hidden_size: int = 64
    num_layers: int = 8
    full_attention_interval: int = 4  # a DSA layer every 4th (0-based 3, 7, …), like GLM-5.3
    mlp_hidden_size: int = 128
    # KDA (Kimi delta attention) layers
    kda_heads: int = 2
    kda_head_dim: int = 16
    conv_kernel: int = 4  # short causal conv over q, k and v; the state keeps K − 1 inputs
    # NoPE MLA layers
    mla_heads: int = 2
    kv_lora_rank: int = 128  # one cached latent row per token
    qk_head_dim: int = 32  # per-head query/key width after the up-projection
    v_head_dim: int = 32
    # DSA indexer
    index_heads: int = 2
    index_head_dim: int = 128  # fp8 key + one float32 scale per 128
    index_kpool: int = 4  # tokens pooled into one index key
    index_topk: int = 16  # tokens selected per query (whole groups), the open group on top
    # storage
    kv_layout: RowLayout = RowLayout.FP8_SCALED
    temporal_dtype: StateDtype = StateDtype.FLOAT32
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("vocab_size", "hidden_size", "num_layers", "full_attention_interval",
                     "mlp_hidden_size", "kda_heads", "kda_head_dim", "conv_kernel", "mla_heads",
                     "kv_lora_rank", "qk_head_dim", "v_head_dim", "index_heads",
                     "index_head_dim", "index_kpool", "index_topk"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"TinyConfig.{name}: expected a positive integer, got {value!r}")
        if self.kv_layout is RowLayout.FP8_RAW:
            raise ValueError("TinyConfig.kv_layout: the reference model stores bf16 or fp8 scaled rows")
        for name in ("kv_lora_rank", "index_head_dim"):
            if getattr(self, name) % FP8_SCALE_GROUP:
                raise ValueError(f"TinyConfig.{name}: must be a multiple of {FP8_SCALE_GROUP}")
        if self.index_topk % self.index_kpool:
            raise ValueError("TinyConfig.index_topk: must be a multiple of index_kpool "
                             "(SGLang asserts index_topk % index_kpool == 0)")
        if self.vocab_size > 1 << 16:
            raise ValueError("TinyConfig.vocab_size: at most 65536")

    @property
    def layer_kinds(self) -> tuple[LayerKind, ...]:
        interval = self.full_attention_interval
        return tuple(LayerKind.FULL if (i + 1) % interval == 0 else LayerKind.LINEAR
                     for i in range(self.num_layers))

    @property
    def full_layer_ids(self) -> tuple[int, ...]:
        return tuple(i for i, k in enumerate(self.layer_kinds) if k is LayerKind.FULL)

    @property
    def linear_layer_ids(self) -> tuple[int, ...]:
        return tuple(i for i, k in enumerate(self.layer_kinds) if k is LayerKind.LINEAR)

    @property
    def kda_dim(self) -> int:
        return self.kda_heads * self.kda_head_dim

    @property
    def conv_channels(self) -> int:
        return 3 * self.kda_dim  # q, k and v each convolved

    @property
    def temporal_torch_dtype(self) -> torch.dtype:
        return STATE_TORCH_DTYPES[self.temporal_dtype]

    @property
    def latent_spec(self) -> LatentRowSpec:
        return LatentRowSpec(kv_lora_rank=self.kv_lora_rank, qk_rope_head_dim=0,
                             layout=self.kv_layout)

    def index_spec(self, *, page_tokens: int) -> IndexKeySpec:
        """Reserved bytes per token as in sglang-0.5.21: a whole key row per token slot."""
        row_bytes = self.index_head_dim + self.index_head_dim // FP8_SCALE_GROUP * 4
        return IndexKeySpec(head_dim=self.index_head_dim, kpool=self.index_kpool,
                            reserved_bytes=row_bytes, page_tokens=page_tokens)

    @property
    def state_spec(self) -> StateSpec:
        return StateSpec(
            conv_shape=(self.conv_kernel - 1, self.conv_channels),
            conv_itemsize=CONV_DTYPE.itemsize,
            temporal_shape=(self.kda_heads, self.kda_head_dim, self.kda_head_dim),
            temporal_itemsize=self.temporal_dtype.itemsize,
        )
