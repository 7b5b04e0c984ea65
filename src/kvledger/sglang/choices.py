"""The closed sets of SGLang's memory-relevant server arguments, as enums.

Members are the strings SGLang's `ServerArgs` accepts (python/sglang/srt/server_args.py and
arg_groups/fields/); `kvledger.sglang.deploy` re-exports them with the `Deployment` that uses
them.

>>> KVDtype.FP8_E4M3.itemsize, DisaggMode("decode").is_decode
(1, True)
"""

from __future__ import annotations

from enum import Enum


class KVDtype(Enum):
    AUTO = "auto"
    BF16 = "bf16"
    FP8_E4M3 = "fp8_e4m3"

    @property
    def itemsize(self) -> int:
        assert self is not KVDtype.AUTO, "resolve kv_cache_dtype before sizing"
        return 2 if self is KVDtype.BF16 else 1


class DsaBackend(Enum):
    """SGLang's DSA (formerly NSA) attention backend; decides the fp8 latent row layout.

    Members are server_args.py `DSA_CHOICES`. SGLang takes one backend for prefill and one for
    decode; `kvledger.sglang.launch` folds the pair into this one field the way
    `calculate_mla_kv_cache_dim` (mem_cache/kv_cache_configurator.py) reads it: trtllm on
    either side means raw rows.
    """

    FLASHMLA_SPARSE = "flashmla_sparse"
    FLASHMLA_SPARSE_Q8 = "flashmla_sparse_q8"
    FLASHMLA_KV = "flashmla_kv"
    FLASHMLA_AUTO = "flashmla_auto"
    FLASHINFER_SPARSE_MLA = "flashinfer_sparse_mla"
    FA3 = "fa3"
    TILELANG = "tilelang"
    AITER = "aiter"
    TRTLLM = "trtllm"

    @property
    def scaled_fp8(self) -> bool:
        # TRT-LLM's DSA kernels read a raw fp8 latent with no per-128 scales (512 B rows for
        # GLM-5.3); every other backend reads the scaled 528-byte layout on CUDA. (On ROCm,
        # calculate_mla_kv_cache_dim also keeps raw rows for tilelang and aiter.)
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
    """server_args.py `LINEAR_ATTN_KERNEL_BACKEND_CHOICES`; only triton supports extra_buffer
    (`supports_mamba_cache_extra_buffer` in arg_groups/overrides.py)."""

    TRITON = "triton"
    CUTEDSL = "cutedsl"
    FLASHINFER = "flashinfer"
    FLASHKDA = "flashkda"
    NVIDIA_KDA = "nvidia_kda"
    PTX_KDA = "ptx_kda"
    HELION = "helion"
    INTEL_XPU = "intel_xpu"


class SpecAlgorithm(Enum):
    """--speculative-algorithm. NEXTN is SGLang's alias of EAGLE
    (`_resolve_speculative_algorithm_alias` in arg_groups/speculative_hook.py)."""

    EAGLE = "EAGLE"
    EAGLE3 = "EAGLE3"
    STANDALONE = "STANDALONE"
    NGRAM = "NGRAM"
    DFLASH = "DFLASH"
    DSPARK = "DSPARK"


class DraftModel(Enum):
    """--speculative-draft-model-path, as far as kvledger can tell: unset, the model's own
    path, or another checkpoint (kvledger.sglang.draftlayers)."""

    UNSET = "unset"
    TARGET = "target"
    OTHER = "other"


class DisaggMode(Enum):
    """--disaggregation-mode (arg_groups/fields/disagg.py): the server's role in a
    prefill/decode split; NULL is an ordinary aggregated server."""

    NULL = "null"
    PREFILL = "prefill"
    DECODE = "decode"

    @property
    def is_decode(self) -> bool:
        return self is DisaggMode.DECODE

    @property
    def is_prefill(self) -> bool:
        return self is DisaggMode.PREFILL

    @property
    def label(self) -> str:
        """How a plan names the role."""
        return "aggregated" if self is DisaggMode.NULL else f"{self.value} role"


class GraphBackend(Enum):
    """--cuda-graph-backend-prefill / --cuda-graph-backend-decode (model_executor/
    cuda_graph_config.py `Backend`); tc_piecewise is 0.5.21's only (`kvledger.sglang.cudagraphs`)."""

    FULL = "full"
    BREAKABLE = "breakable"
    TC_PIECEWISE = "tc_piecewise"
    DISABLED = "disabled"
