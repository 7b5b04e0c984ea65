"""Component specs: frozen, fully resolved shapes that own their byte formulas.

A spec never sees the model or the deployment; `kvledger.sglang.resolve` builds specs from both.
Pools allocate from the same specs, so ledger bytes and allocated bytes cannot drift apart.

>>> LatentRowSpec(kv_lora_rank=512, qk_rope_head_dim=0, layout=RowLayout.FP8_SCALED).row_bytes
528
>>> LatentRowSpec(kv_lora_rank=512, qk_rope_head_dim=64, layout=RowLayout.FP8_SCALED).row_bytes
656
>>> key = IndexKeySpec(head_dim=128, kpool=4, reserved_bytes=132, page_tokens=64)
>>> key.page_bytes, key.written_bytes_per_token
(8448, 33)
>>> s = StateSpec(conv_shape=(3, 24576), conv_itemsize=2, temporal_shape=(64, 128, 128),
...               temporal_itemsize=4)
>>> s.conv_bytes, s.temporal_bytes, s.bytes_per_layer
(147456, 4194304, 4341760)
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from math import prod

from kvledger.core.units import cdiv

FP8_SCALE_GROUP = 128  # elements sharing one fp32 scale in scaled fp8 rows
FP8_SCALE_BYTES = 4  # one float32 scale per group
BF16_BYTES = 2


class RowLayout(Enum):
    """How one cached latent row is stored."""

    BF16 = "bf16"  # every element 2 B
    FP8_SCALED = "fp8 scaled"  # latent in fp8 + a 4 B scale per 128; RoPE part kept in bf16
    FP8_RAW = "fp8 raw"  # every element 1 B, no scales (TRT-LLM DSA, plain MLA fp8)

    @property
    def torch_dtype_name(self) -> str:
        return "bfloat16" if self is RowLayout.BF16 else "uint8"


@dataclass(frozen=True, slots=True, kw_only=True)
class LatentRowSpec:
    """One MLA latent row per token per full layer (there is no separate K and V)."""

    kv_lora_rank: int
    qk_rope_head_dim: int
    layout: RowLayout

    @property
    def row_bytes(self) -> int:
        match self.layout:
            case RowLayout.BF16:
                return (self.kv_lora_rank + self.qk_rope_head_dim) * BF16_BYTES
            case RowLayout.FP8_SCALED:
                return (
                    self.kv_lora_rank * 1  # fp8 latent, B
                    + self.kv_lora_rank // FP8_SCALE_GROUP * FP8_SCALE_BYTES  # scales, B
                    + self.qk_rope_head_dim * BF16_BYTES  # RoPE part in bf16, B
                )
            case RowLayout.FP8_RAW:
                return (self.kv_lora_rank + self.qk_rope_head_dim) * 1

    @property
    def bytes_per_token(self) -> int:
        return self.row_bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class GqaRowSpec:
    """K and V rows of the KV heads this rank holds, per token per full layer."""

    kv_heads_per_rank: int
    head_dim: int
    itemsize: int

    @property
    def row_bytes(self) -> int:
        return (
            2  # key + value
            * self.kv_heads_per_rank  # heads on this rank
            * self.head_dim  # elements per head
            * self.itemsize  # B per element
        )

    @property
    def bytes_per_token(self) -> int:
        return self.row_bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexKeySpec:
    """DSA index keys: fp8 key + per-128 scale, stored page by page.

    A page holds all key bytes of its tokens, then all scale bytes. With kpool > 1 only one
    pooled key is written per kpool tokens, while `reserved_bytes` per token are allocated.
    """

    head_dim: int  # elements of one index key
    kpool: int  # tokens pooled into one key
    reserved_bytes: int  # B per token per layer the cache allocates (rule set decides)
    page_tokens: int  # tokens per page

    @property
    def key_bytes(self) -> int:
        return self.head_dim * 1  # fp8 key, B

    @property
    def scale_bytes(self) -> int:
        return self.head_dim // FP8_SCALE_GROUP * FP8_SCALE_BYTES

    @property
    def row_bytes(self) -> int:
        return self.key_bytes + self.scale_bytes

    @property
    def written_bytes_per_token(self) -> int:
        """What is actually written: one row per kpool tokens (rounded up to whole bytes)."""
        return cdiv(self.row_bytes, self.kpool)

    @property
    def page_bytes(self) -> int:
        return self.page_tokens * self.reserved_bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class StateSpec:
    """One linear-attention layer's state in one slot, already sharded by attn_tp."""

    conv_shape: tuple[int, ...]
    conv_itemsize: int
    temporal_shape: tuple[int, ...]
    temporal_itemsize: int

    @property
    def conv_bytes(self) -> int:
        return prod(self.conv_shape) * self.conv_itemsize

    @property
    def temporal_bytes(self) -> int:
        return prod(self.temporal_shape) * self.temporal_itemsize

    @property
    def bytes_per_layer(self) -> int:
        return self.conv_bytes + self.temporal_bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class TailSpec:
    """The DSA compress tail: per-request bf16 key and score buffers for the unpooled group.

    rows = max_running_requests + 2 (req_to_token rows + 1); width = kpool + draft tokens.
    """

    rows: int
    width_tokens: int
    head_dim: int
    itemsize: int = BF16_BYTES

    @property
    def buffer_bytes(self) -> int:
        return (
            self.rows  # request rows (+ padding)
            * self.width_tokens  # tokens of the open group
            * self.head_dim  # elements per key
            * self.itemsize  # B per element
        )

    @property
    def bytes_per_layer(self) -> int:
        return 2 * self.buffer_bytes  # key buffer + score buffer
