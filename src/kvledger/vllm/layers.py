"""Per-layer KV-cache specs as vLLM builds them (vllm/v1/kv_cache_interface.py).

- `AttentionLayer` is `FullAttentionSpec` (K and V rows per KV head) or `MLAAttentionSpec`
  (one latent row of kv_lora_rank + rope elements); page = block_tokens × bytes per token,
  unless padded.
- `MambaLayer` is `MambaSpec`: the shapes and dtypes a model class returns from
  `get_mamba_state_shape_from_config` / `get_mamba_state_dtype_from_config`; its page is
  Σ prod(shape) × itemsize, whatever the block size, unless padded up to the attention page.

`max_memory_usage_bytes` is what one request of max_model_len tokens can hold:
attention `cdiv(max_model_len, block) × page`; Mamba `page × (1 + spec)` with
mamba_cache_mode none, `page × (2 + spec + checkpoint)` with align
(MambaSpec.max_memory_usage_bytes; `checkpoint` is num_prefill_checkpoint_blocks, 0 or 1, set
by the layers `kvledger.vllm.checkpoint` names, in the releases that have it).

State shapes follow `MambaStateShapeCalculator` (model_executor/layers/mamba/mamba_utils.py):
Gated DeltaNet / KDA / Mamba2 conv states keep `conv_kernel − 1 + num_spec` rows of the
TP-sharded conv channels; the temporal state is (heads/tp, dim, dim). The channel and head
counts are the ones kvledger's model layer already derives (`StateShape`), which match vLLM's
`divide(conv_dim, tp)` for every shape vLLM accepts.

>>> a = AttentionLayer(mla=False, num_kv_heads=1, head_size=256, itemsize=2, block_tokens=544)
>>> a.bytes_per_token, a.page_bytes
(1024, 557056)
>>> m = MambaLayer(shapes=((3, 4096), (16, 128, 128)), itemsizes=(2, 2), block_tokens=544,
...                spec_blocks=0, align=False, page_size_padded=557056)
>>> m.real_page_bytes, m.page_bytes, m.padding_bytes, m.max_memory_usage_bytes(262144)
(548864, 557056, 8192, 557056)
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from math import prod

from kvledger.core.errors import DeploymentError
from kvledger.core.units import cdiv
from kvledger.model.arch import Family

# The checkpoints kvledger embeds are all bfloat16; vLLM's `auto` dtypes follow the model.
MODEL_ITEMSIZE = 2
# MLAAttentionSpec.real_page_size_bytes with cache_dtype_str "fp8_ds_mla": block × 656
# (512 fp8 latent + 4 fp32 scales + 64 bf16 rope, vllm/v1/attention/backends/mla/flashmla_sparse.py).
FP8_DS_MLA_ROW_BYTES = 656
# Indexer.__init__ (model_executor/models/deepseek_v2.py): the k cache row is
# head_dim + head_dim // quant_block_size × 4 bytes, uint8 (fp8 values + one fp32 scale per 128).
INDEXER_QUANT_BLOCK = 128



@dataclass(frozen=True, slots=True, kw_only=True)
class AttentionLayer:
    mla: bool
    num_kv_heads: int  # per rank (MLA: 1)
    head_size: int  # elements per head (MLA: kv_lora_rank + qk_rope_head_dim)
    itemsize: int
    block_tokens: int
    page_size_padded: int | None = None
    # `fp8_ds_mla`: sparse MLA's packed fp8 row (MLAAttentionSpec.real_page_size_bytes).
    fp8_ds_mla: bool = False

    @property
    def bytes_per_token(self) -> int:
        if self.fp8_ds_mla:
            return FP8_DS_MLA_ROW_BYTES
        if self.mla:
            return (
                self.num_kv_heads  # 1 latent "head"
                * self.head_size  # latent + rope elements
                * self.itemsize  # B per element
            )
        return (
            self.num_kv_heads  # KV heads on this rank
            * 2 * self.head_size  # K and V elements (head_size_v = head_size)
            * self.itemsize  # B per element
        )

    @property
    def align_bytes_per_token(self) -> int:
        """The row `_align_hybrid_block_size` (platforms/interface.py) sizes the hybrid block
        from: `MLAAttentionSpec(block_size=1, head_size, dtype)` built without the layer's
        `state_content_bytes`, so an fp8_ds_mla row counts head_size × 1 B, not the 656 B
        the layer stores (`MLAAttention.get_kv_cache_spec`, model_executor/layers/attention/
        mla_attention.py). Read the same in v0.24.0, v0.27.0, v0.32.0 and v0.33.0.

        >>> AttentionLayer(mla=True, num_kv_heads=1, head_size=512, itemsize=1,
        ...                block_tokens=64, fp8_ds_mla=True).align_bytes_per_token
        512
        """
        if self.fp8_ds_mla:
            return self.num_kv_heads * self.head_size * self.itemsize
        return self.bytes_per_token

    @property
    def real_page_bytes(self) -> int:
        return self.block_tokens * self.bytes_per_token

    @property
    def page_bytes(self) -> int:
        return self.page_size_padded or self.real_page_bytes

    def max_memory_usage_bytes(self, max_model_len: int) -> int:
        return cdiv(max_model_len, self.block_tokens) * self.page_bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexerLayer:
    """`DeepseekV32IndexerCache.get_kv_cache_spec`: an MLAAttentionSpec of one uint8 row per
    stored state (head_size = index_head_dim + index_head_dim // 128 × 4) and the attention
    block size. With a kpool indexer (GLM-5.3-Flash, `index_kpool` k) a state covers k tokens
    (`tokens_per_state`), so a block holds block_tokens // k rows.

    >>> IndexerLayer(head_dim=128, block_tokens=64, tokens_per_state=1).page_bytes
    8448
    """

    head_dim: int  # index_head_dim, elements
    block_tokens: int
    tokens_per_state: int = 1

    @property
    def row_bytes(self) -> int:
        return (
            self.head_dim  # fp8 values, 1 B each
            + self.head_dim // INDEXER_QUANT_BLOCK * 4  # one fp32 scale per 128 values
        )

    @property
    def page_bytes(self) -> int:
        return (
            self.block_tokens // self.tokens_per_state  # states per block
            * self.row_bytes  # B per state
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class KpoolTailLayer:
    """`Glm5NextTailCache.get_kv_cache_spec` (models/glm5next/common/sparse_indexer.py): a
    CircularBufferSpec ring of `ring_tokens` slots, two bf16 head slots (raw K and gate
    score) of the indexer's head_dim each; one block per request.

    ring = kpool × next_power_of_2(cdiv(kpool + num_speculative_tokens, kpool)).

    >>> KpoolTailLayer(head_dim=128, kpool=4, num_speculative_tokens=0).page_bytes
    2048
    >>> KpoolTailLayer(head_dim=128, kpool=4, num_speculative_tokens=2).ring_tokens
    8
    """

    head_dim: int
    kpool: int
    num_speculative_tokens: int

    @property
    def ring_tokens(self) -> int:
        pools = cdiv(self.kpool + self.num_speculative_tokens, self.kpool)
        return self.kpool * (1 << (pools - 1).bit_length())  # next power of two

    @property
    def page_bytes(self) -> int:
        return (
            2  # head slots: K and gate score
            * self.ring_tokens  # one state per token
            * self.head_dim * 2  # bf16 elements
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class MambaLayer:
    shapes: tuple[tuple[int, ...], ...]  # (conv state, temporal state) per rank
    itemsizes: tuple[int, ...]
    block_tokens: int  # max_model_len with mamba_cache_mode none, the attention block in align
    spec_blocks: int  # num_speculative_blocks = num_speculative_tokens
    align: bool
    page_size_padded: int | None = None
    checkpoint_blocks: int = 0  # num_prefill_checkpoint_blocks (counted in align mode only)

    @property
    def real_page_bytes(self) -> int:
        return sum(prod(shape) * size for shape, size in zip(self.shapes, self.itemsizes,
                                                              strict=True))

    @property
    def page_bytes(self) -> int:
        return self.page_size_padded or self.real_page_bytes

    @property
    def padding_bytes(self) -> int:
        return self.page_bytes - self.real_page_bytes

    @property
    def blocks_per_request(self) -> int:
        if self.align:
            return 2 + self.spec_blocks + self.checkpoint_blocks
        return 1 + self.spec_blocks

    def max_memory_usage_bytes(self, max_model_len: int) -> int:
        del max_model_len  # a state does not grow with the sequence
        return self.page_bytes * self.blocks_per_request


class SsmDtype(Enum):
    """Where a model class takes its temporal-state dtype when --mamba-ssm-cache-dtype is auto."""

    CONV = "conv dtype"  # MambaStateDtypeCalculator._mamba_state_dtype: same as the conv state
    CONFIG = "config mamba_ssm_dtype"  # Qwen3.5: the checkpoint's pinned dtype
    # Nemotron-H: NemotronHForCausalLMConfig.update_mamba_ssm_cache_dtype (models/config.py)
    # takes the HF config's mamba_ssm_cache_dtype, else DEFAULT_MAMBA_SSM_CACHE_DTYPE "float32"
    # (earlier releases defaulted to float16 there).
    FLOAT32 = "float32 default"
    ALWAYS_FLOAT32 = "always float32"  # KDA: kda_state_dtype returns float32 for the recurrence
    # Kimi-K3's KDA (KimiK3DeltaAttention.get_state_dtype, models/kimi_k3/nvidia/kda.py) passes
    # the flag on: kda_state_dtype keeps float32 for auto, takes float32 or bfloat16, and
    # raises for anything else
    KDA_FLAG = "float32 unless --mamba-ssm-cache-dtype float32 / bfloat16"


# get_mamba_state_dtype_from_config of each hybrid model class vLLM ships.
SSM_DTYPE_RULE: dict[Family, SsmDtype] = {
    Family.QWEN3_NEXT: SsmDtype.CONV,
    Family.QWEN3_5: SsmDtype.CONFIG,
    Family.NEMOTRON_H: SsmDtype.FLOAT32,
    Family.FALCON_H1: SsmDtype.CONV,
    Family.KIMI_LINEAR: SsmDtype.ALWAYS_FLOAT32,
    Family.JAMBA: SsmDtype.CONV,  # mamba1_state_dtype → _mamba_state_dtype
    # Glm5NextForCausalLM.get_mamba_state_dtype_from_config: MambaStateDtypeCalculator.kda_state_dtype
    Family.GLM5_NEXT: SsmDtype.ALWAYS_FLOAT32,
    # KimiK3ForConditionalGeneration with the full-rank gate (its KimiK3DeltaAttention layers;
    # without `use_full_rank_gate` vLLM builds Kimi-Linear's layer, whose rule is ALWAYS_FLOAT32)
    Family.KIMI_K3: SsmDtype.KDA_FLAG,
}
# MambaStateDtypeCalculator.kda_state_dtype: the recurrent dtypes it accepts
KDA_FLAG_DTYPES = ("auto", "float32", "bfloat16")

_ITEMSIZE = {"float32": 4, "bfloat16": 2, "float16": 2}


def state_itemsizes(family: Family, config_ssm_dtype: str | None, mamba_cache_dtype: str,
                    mamba_ssm_cache_dtype: str) -> tuple[int, int]:
    """(conv, temporal) bytes per element for a model class and the two dtype flags."""
    conv = MODEL_ITEMSIZE if mamba_cache_dtype == "auto" else _ITEMSIZE[mamba_cache_dtype]
    rule = SSM_DTYPE_RULE[family]
    if rule is SsmDtype.ALWAYS_FLOAT32:
        return conv, 4
    if rule is SsmDtype.KDA_FLAG:
        if mamba_ssm_cache_dtype not in KDA_FLAG_DTYPES:
            raise DeploymentError(f"--mamba-ssm-cache-dtype {mamba_ssm_cache_dtype}: KDA recurrent "
                                  "state supports only auto, float32, and bfloat16")
        return conv, 4 if mamba_ssm_cache_dtype == "auto" else _ITEMSIZE[mamba_ssm_cache_dtype]
    if mamba_ssm_cache_dtype != "auto":
        return conv, _ITEMSIZE[mamba_ssm_cache_dtype]
    if rule is SsmDtype.FLOAT32:
        return conv, 4
    if rule is SsmDtype.CONFIG and config_ssm_dtype:
        return conv, _ITEMSIZE[config_ssm_dtype]
    return conv, conv
