"""Deployment: the SGLang server flags that change memory, frozen and validated.

Field names follow SGLang's `ServerArgs` (python/sglang/srt/server_args.py). "Auto" values
(KV dtype, mamba strategy, page size) are resolved once, against a model, a rule set and a
GPU, by `kvledger.resolve`; this module only holds and checks what the user said.

>>> d = Deployment(tp_size=8, dp_size=8, enable_dp_attention=True)
>>> d.attn_dp_size, d.attn_tp_size
(8, 1)
>>> Deployment(tp_size=8, dp_size=4, enable_dp_attention=True).attn_tp_size
2
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class DeploymentError(ValueError):
    """Invalid or contradictory deployment flags; the message names the flag."""


class KVDtype(Enum):
    AUTO = "auto"
    BF16 = "bf16"
    FP8_E4M3 = "fp8_e4m3"

    @property
    def itemsize(self) -> int:
        assert self is not KVDtype.AUTO, "resolve kv_cache_dtype before sizing"
        return 2 if self is KVDtype.BF16 else 1


class DsaBackend(Enum):
    """SGLang's NSA (DSA) attention backend; decides the fp8 latent row layout."""

    FLASHMLA_SPARSE = "flashmla_sparse"
    FLASHMLA_KV = "flashmla_kv"
    FA3 = "fa3"
    TILELANG = "tilelang"
    AITER = "aiter"
    TRTLLM = "trtllm"

    @property
    def scaled_fp8(self) -> bool:
        # TRT-LLM's DSA kernels read a raw fp8 latent with no per-128 scales (512 B rows for
        # GLM-5.3); every other backend reads the scaled 528-byte layout.
        return self is not DsaBackend.TRTLLM


class StateDtype(Enum):
    FLOAT32 = "float32"
    BFLOAT16 = "bfloat16"
    FLOAT16 = "float16"

    @property
    def itemsize(self) -> int:
        return 4 if self is StateDtype.FLOAT32 else 2


class MambaStrategy(Enum):
    AUTO = "auto"
    EXTRA_BUFFER = "extra_buffer"
    NO_BUFFER = "no_buffer"


class LinearBackend(Enum):
    TRITON = "triton"
    CUTEDSL = "cutedsl"
    FLASHINFER = "flashinfer"


@dataclass(frozen=True, slots=True, kw_only=True)
class Deployment:
    tp_size: int = 1
    dp_size: int = 1
    enable_dp_attention: bool = False
    attn_cp_size: int = 1
    kv_cache_dtype: KVDtype = KVDtype.AUTO
    dsa_backend: DsaBackend = DsaBackend.FLASHMLA_SPARSE
    mamba_ssm_dtype: StateDtype | None = None  # None: the config's, else float32
    mamba_strategy: MambaStrategy = MambaStrategy.AUTO
    disable_overlap_schedule: bool = False
    linear_attn_backend: LinearBackend = LinearBackend.TRITON
    disable_radix_cache: bool = False
    page_size: int | None = None  # None: the rule set's page for the model
    mem_fraction_static: float | None = None  # None: 1.0 with --available-gib, else SGLang's
    mamba_full_memory_ratio: float = 0.9  # state : token bytes, a ratio (not a fraction)
    max_mamba_cache_size: int | None = None  # global state slots, split over attn_dp
    max_total_tokens: int | None = None
    max_running_requests: int | None = None  # global, split over attn_dp
    context_length: int | None = None  # None: the model's max_position_embeddings
    speculative_num_draft_tokens: int = 0  # MTP draft tokens; 0 = speculative decoding off
    enable_hierarchical_cache: bool = False
    hicache_ratio: float | None = None  # host size = ratio × device size, per pool
    hicache_size_gb: float | None = None  # total host size in GB; overrides the ratio

    @property
    def attn_dp_size(self) -> int:
        return self.dp_size if self.enable_dp_attention else 1

    @property
    def attn_tp_size(self) -> int:
        return self.tp_size // self.attn_dp_size // self.attn_cp_size

    @property
    def speculative(self) -> bool:
        return self.speculative_num_draft_tokens > 0
