"""MLA attention backends: which one vLLM picks on a GPU, and what that does to the cache.

vLLM walks a priority list per compute capability (`_get_backend_priorities`,
vllm/platforms/cuda.py) and takes the first backend whose checks pass (capability, sparse or
dense, head size, quantised KV). The backend then decides three cache facts:
- the block size: `get_preferred_block_size` keeps the default 16 when the backend's kernel
  block sizes accept it, else their smallest (v1/attention/backend.py); with the sparse
  indexer beside it (kernel block 64) every sparse-MLA block is 64;
- the fp8 row: FLASHMLA_SPARSE stores quantised rows as `fp8_ds_mla` (656 B for a 576-element
  latent), FLASHINFER_MLA_SPARSE_SM120 does so for `auto` and fp8 too
  (`_canonicalize_sparse_mla_kv_cache_dtype`, model_executor/layers/attention/
  mla_attention.py); the others keep the raw row;
- the block stride alignment a block-outermost layout rounds to (`customize_spec`:
  `align_blocks_to_rows(spec, n)` is n rows; FLASHMLA_SPARSE's `MultipleOf(64)` off SM100
  with quantised KV is a page of gcd(64, block) tokens, or none when that is the block).

The 0.33 table below was read in each backend under v1/attention/backends/mla/ (its
`get_supported_kernel_block_sizes`, `supports_compute_capability`, `customize_spec`) and
matches what vLLM 0.33.0 picked on every GPU of the differential grid (oracle/vllm).

>>> from kvledger.vllm.rules import RULES
>>> r33 = RULES["vllm-0.33"]
>>> [mla_backend(r33, sparse=False, major=m, quantized=False, head_size=576).name
...  for m in (8, 9, 10, 12)]
['TRITON_MLA', 'FLASH_ATTN_MLA', 'FLASHINFER_MLA', 'TRITON_MLA']
>>> mla_backend(r33, sparse=False, major=9, quantized=True, head_size=576).preferred_block
64
>>> mla_backend(r33, sparse=True, major=8, quantized=False, head_size=576) is None
True
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from math import gcd, lcm
from typing import TYPE_CHECKING

from kvledger.core.errors import DeploymentError
from kvledger.model.arch import AttnKind, ModelArch
from kvledger.vllm.layers import AttentionLayer, IndexerLayer

if TYPE_CHECKING:
    from kvledger.core.gpus import GPU
    from kvledger.vllm.deploy import VllmDeployment
    from kvledger.vllm.rules import VllmRules

DEFAULT_BLOCK = 16  # CacheConfig.DEFAULT_BLOCK_SIZE
FLASHMLA_BLOCK = 64  # FlashMLA's only block size
# Sparse MLA's block without --block-size: every sparse backend's and the indexer's common
# size (`_preferred_block_size_for_backends`, platforms/interface.py). A --block-size is kept
# where a sparse backend takes it (VllmRules.sparse_user_block_multiples).
FLASHMLA_SPARSE_BLOCK = 64


@dataclass(frozen=True, slots=True, kw_only=True)
class MlaBackend:
    name: str
    kernel_blocks: tuple[int, ...] = ()  # exact kernel block sizes
    kernel_multiple_of: int | None = None  # MultipleOf(n)
    ds_mla_when_quantized: bool = False  # fp8 rows stored as fp8_ds_mla
    ds_mla_when_auto: bool = False  # `auto` stored as fp8_ds_mla too
    stride_rows: int | None = None  # align_blocks_to_rows(spec, n)
    stride_multiple_of_when_quantized: int | None = None  # MultipleOf(n) for quantised KV
    # Takes --decode-context-parallel-size > 1: the impl's `supports_dcp` (0.33's selector
    # reads it) / `can_return_lse_for_decode` (0.24's model runner asserts it).
    dcp: bool = True

    @property
    def smallest_block(self) -> int:
        return self.kernel_multiple_of or min(self.kernel_blocks)

    @property
    def preferred_block(self) -> int:
        """`get_preferred_block_size(16)`."""
        if DEFAULT_BLOCK in self.kernel_blocks or (
                self.kernel_multiple_of and DEFAULT_BLOCK % self.kernel_multiple_of == 0):
            return DEFAULT_BLOCK
        return self.smallest_block

    def stride_alignment_bytes(self, *, block_tokens: int, row_bytes: int,
                               quantized: bool) -> int:
        """`get_block_stride_alignment` of the latent spec (1: none)."""
        multiple = self.stride_multiple_of_when_quantized if quantized else None
        if multiple is not None:
            if gcd(multiple, block_tokens) == block_tokens:
                return 1
            return gcd(multiple, block_tokens) * row_bytes
        if self.stride_rows:
            return self.stride_rows * row_bytes
        return 1


@dataclass(frozen=True, slots=True, kw_only=True)
class MlaChoice:
    """One entry of a priority list: `backend` serves these cases."""

    sparse: bool
    majors: frozenset[int]  # compute capability majors
    backend: MlaBackend
    quantized: bool | None = None  # None: either
    head_size: int | None = None  # None: any


TRITON_MLA = MlaBackend(name="TRITON_MLA", kernel_multiple_of=16)
FLASH_ATTN_MLA = MlaBackend(name="FLASH_ATTN_MLA", kernel_multiple_of=16)  # SM90, no fp8 KV
FLASHMLA = MlaBackend(name="FLASHMLA", kernel_blocks=(64,))
FLASHINFER_MLA = MlaBackend(name="FLASHINFER_MLA", kernel_blocks=(32, 64))
# SparseMLACommonImpl leaves `supports_dcp` False; FlashMLASparseImpl and
# FlashInferMLASparseImpl set it (v1/attention/backends/mla/*.py).
FLASH_ATTN_MLA_SPARSE = MlaBackend(name="FLASH_ATTN_MLA_SPARSE", kernel_multiple_of=64,
                                   stride_rows=1, dcp=False)
# customize_spec: quantised off SM100, MultipleOf(64); else align_blocks_to_rows(spec), one row
FLASHMLA_SPARSE = MlaBackend(name="FLASHMLA_SPARSE", kernel_multiple_of=64,
                             ds_mla_when_quantized=True, stride_multiple_of_when_quantized=64,
                             stride_rows=1)
FLASHINFER_MLA_SPARSE_SM90 = MlaBackend(name="FLASHINFER_MLA_SPARSE_SM90",
                                        kernel_multiple_of=64, stride_rows=1, dcp=False)
FLASHINFER_MLA_SPARSE = MlaBackend(name="FLASHINFER_MLA_SPARSE", kernel_multiple_of=32,
                                   stride_rows=32)
# v0.33.0's SM120 backend inherits `_FlashInferMLASparseBackendBase.customize_spec`
# (v1/attention/backends/mla/flashinfer_mla_sparse.py): align_blocks_to_rows(spec, 64), its
# MultipleOf(64) kernel block; v0.24.0's class has no customize_spec.
FLASHINFER_MLA_SPARSE_SM120 = MlaBackend(name="FLASHINFER_MLA_SPARSE_SM120",
                                         kernel_multiple_of=64, ds_mla_when_quantized=True,
                                         ds_mla_when_auto=True, stride_rows=64, dcp=False)
# v0.24.0's impls: only FlashMLA, FlashAttention MLA, CUTLASS MLA and Triton MLA (and, for GQA,
# FlashAttention and FlashInfer) set `can_return_lse_for_decode`, so no sparse one takes DCP.
FLASHINFER_MLA_SPARSE_SM120_024 = MlaBackend(name="FLASHINFER_MLA_SPARSE_SM120",
                                             kernel_multiple_of=64, ds_mla_when_quantized=True,
                                             ds_mla_when_auto=True, dcp=False)

# v0.24.0's FlashInfer sparse kernel takes blocks of 32 or 64 (v1/attention/backends/mla/
# flashinfer_mla_sparse.py); 0.33's is MultipleOf(32) with 32-row strides.
FLASHINFER_MLA_SPARSE_024 = MlaBackend(name="FLASHINFER_MLA_SPARSE", kernel_blocks=(32, 64),
                                       dcp=False)
FLASHMLA_SPARSE_024 = MlaBackend(name="FLASHMLA_SPARSE", kernel_multiple_of=64,
                                 ds_mla_when_quantized=True,
                                 stride_multiple_of_when_quantized=64, dcp=False)
FLASHINFER_MLA_024 = MlaBackend(name="FLASHINFER_MLA", kernel_blocks=(32, 64), dcp=False)

# vLLM 0.33's `_get_backend_priorities` for MLA, reduced to the first backend whose checks
# pass for the cases kvledger's models reach (bfloat16 checkpoints, 512- or 576-wide latents).
MLA_CHOICES_033 = (
    MlaChoice(sparse=False, majors=frozenset({10}), backend=FLASHINFER_MLA),
    MlaChoice(sparse=False, majors=frozenset({9}), quantized=False, backend=FLASH_ATTN_MLA),
    MlaChoice(sparse=False, majors=frozenset({9}), quantized=True, backend=FLASHMLA),
    MlaChoice(sparse=False, majors=frozenset({8, 12}), backend=TRITON_MLA),
    # SM90: FlashInfer's sparse kernel first for a 512-wide latent, FlashAttention's otherwise;
    # FlashMLA's sparse kernel for fp8
    MlaChoice(sparse=True, majors=frozenset({9}), head_size=512,
              backend=FLASHINFER_MLA_SPARSE_SM90),
    MlaChoice(sparse=True, majors=frozenset({9}), quantized=False,
              backend=FLASH_ATTN_MLA_SPARSE),
    # FlashMLA's sparse kernel takes a 512-wide latent only unquantised on SM90
    # (`FlashMLASparseBackend.supports_combination`)
    MlaChoice(sparse=True, majors=frozenset({9}), quantized=True, head_size=576,
              backend=FLASHMLA_SPARSE),
    # reached only with DCP, the two before it having no DCP: FlashMLA's for bfloat16
    MlaChoice(sparse=True, majors=frozenset({9}), quantized=False, backend=FLASHMLA_SPARSE),
    # SM100: FlashInfer's sparse kernel for fp8; FlashMLA's (or FA4's) for bfloat16
    MlaChoice(sparse=True, majors=frozenset({10}), quantized=True, backend=FLASHINFER_MLA_SPARSE),
    MlaChoice(sparse=True, majors=frozenset({10}), quantized=False, backend=FLASHMLA_SPARSE),
    MlaChoice(sparse=True, majors=frozenset({12}), backend=FLASHINFER_MLA_SPARSE_SM120),
)


def mla_backend(rules: VllmRules, *, sparse: bool, major: int, quantized: bool,
                head_size: int, dcp: bool = False) -> MlaBackend | None:
    """The backend `rules` pick, or None when none serves the case (vLLM refuses: "No valid
    attention backend found"). With `dcp` (--decode-context-parallel-size > 1) a release
    whose selector checks DCP support (`ContextParallelRules.dcp_filters_backends`) skips
    the backends without it."""
    skip = dcp and rules.context_parallel is not None \
        and rules.context_parallel.dcp_filters_backends
    for choice in rules.mla_backends:
        if (choice.sparse is sparse and major in choice.majors
                and choice.quantized in (None, quantized)
                and choice.head_size in (None, head_size)
                and not (skip and not choice.backend.dcp)):
            return choice.backend
    return None


def mla_backend_for(model: ModelArch, dep: VllmDeployment, rules: VllmRules,
                    gpu: GPU | None) -> MlaBackend | None:
    """The MLA backend of the rule set's table for a model on a CUDA GPU (None: GQA, no
    table, no GPU or ROCm); DeploymentError where vLLM has none ("No valid attention backend
    found")."""
    if model.attn is AttnKind.GQA or not rules.mla_backends or gpu is None or gpu.arch.is_rocm:
        return None
    assert model.mla is not None
    sparse = model.attn is AttnKind.DSA
    major = gpu.compute_capability[0]
    dcp = dep.decode_context_parallel_size
    backend = mla_backend(rules, sparse=sparse, major=major,
                          quantized=dep.kv_cache_dtype != "auto",
                          head_size=model.mla.kv_lora_rank + model.mla.qk_rope_head_dim,
                          dcp=dcp > 1)
    what = f"{'sparse ' if sparse else ''}MLA attention backend"
    if backend is None and dcp > 1 and mla_backend(
            rules, sparse=sparse, major=major, quantized=dep.kv_cache_dtype != "auto",
            head_size=model.mla.kv_lora_rank + model.mla.qk_rope_head_dim) is not None:
        raise DeploymentError(
            f"--decode-context-parallel-size {dcp}: vLLM has no {what} with DCP for SM "
            f"{major}.x and --kv-cache-dtype {dep.kv_cache_dtype} (No valid attention backend "
            "found: DCP not supported)")
    if backend is None:
        raise DeploymentError(
            f"--gpu {gpu.name}: vLLM has no {what} "
            f"for SM {major}.x (No valid attention backend found; sparse MLA needs SM 9.0 or "
            "newer)")
    if dcp > 1 and not backend.dcp:  # a release whose model runner refuses it at start-up
        raise DeploymentError(
            f"--decode-context-parallel-size {dcp}: vLLM picks {backend.name} on SM {major}.x, "
            "whose impl returns no softmax LSE (Decode Context Parallelism (DCP) requires "
            "attention implementations to return the softmax LSE during decode)")
    return backend


def indexer_kernel_blocks(kpool: int, gpu: GPU | None) -> tuple[int, ...]:
    """`Glm5NextIndexerBackend.get_supported_kernel_block_sizes` (v1/attention/backends/mla/
    indexer.py): index_kpool × the paged-MQA page sizes (`get_paged_mqa_page_sizes`,
    utils/deep_gemm.py: 32 and 64 states, only 64 on the SM120 family). No GPU: not SM120.

    >>> from kvledger.core.gpus import get_gpu
    >>> indexer_kernel_blocks(4, get_gpu("h200")), indexer_kernel_blocks(4, get_gpu("RTX PRO 6000"))
    ((128, 256), (256,))
    """
    sm120 = gpu is not None and not gpu.arch.is_rocm and gpu.compute_capability[0] == 12
    return tuple(kpool * states for states in ((64,) if sm120 else (32, 64)))


def block_stride_alignment_bytes(model: ModelArch, attention: AttentionLayer,
                                 backend: MlaBackend) -> int:
    """lcm of the latent's and the indexer's block-stride alignments
    (`KVCacheSpec.get_block_stride_alignment`, v1/kv_cache_interface.py): the latent's from
    its backend's `customize_spec`; the indexer's from `Glm5NextIndexerBackend`'s kernel
    blocks, index_kpool × the paged-MQA page sizes (32 and 64 states, only 64 on SM120:
    utils/deep_gemm.py), made `MultipleOf(the largest)` by `customize_attention_spec`
    (v1/worker/utils.py): a page of gcd(that, block) tokens unless that is the whole block.

    >>> from kvledger.model.config import load_model
    >>> att = AttentionLayer(mla=True, num_kv_heads=1, head_size=512, itemsize=2,
    ...                      block_tokens=1152)
    >>> block_stride_alignment_bytes(load_model("glm-5.3-flash"), att, FLASHINFER_MLA_SPARSE_SM90)
    33792
    """
    assert model.indexer is not None
    block = attention.block_tokens
    latent = backend.stride_alignment_bytes(block_tokens=block,
                                            row_bytes=attention.bytes_per_token,
                                            quantized=attention.itemsize == 1)
    kpool = model.indexer.kpool
    kernel = gcd(kpool * 64, block)  # the largest kernel block, 64 states, on every GPU
    index = 1 if kernel == block else IndexerLayer(
        head_dim=model.indexer.head_dim, block_tokens=kernel, tokens_per_state=kpool).page_bytes
    return lcm(latent, index)


# v0.24.0's: the same dense choices; sparse MLA on SM90 is FlashMLA's for either dtype. Matches
# what vLLM 0.24.0's own planning picked on every GPU of a 200-deployment grid sample.
MLA_CHOICES_024 = (
    *(replace(choice, backend=FLASHINFER_MLA_024) if choice.backend is FLASHINFER_MLA
      else choice for choice in MLA_CHOICES_033 if not choice.sparse),
    MlaChoice(sparse=True, majors=frozenset({9}), backend=FLASHMLA_SPARSE_024),
    MlaChoice(sparse=True, majors=frozenset({10}), quantized=True,
              backend=FLASHINFER_MLA_SPARSE_024),
    MlaChoice(sparse=True, majors=frozenset({10}), quantized=False, backend=FLASHMLA_SPARSE_024),
    MlaChoice(sparse=True, majors=frozenset({12}), backend=FLASHINFER_MLA_SPARSE_SM120_024),
)
