"""vLLM rule sets: what changed between the releases kvledger emulates, as data.

Each field answers one question the planner asks; code never compares version strings.
Sources (files under `vllm/` of each release):

- `vllm-0.13` (the 0.10–0.13 line): `model_executor/models/config.py`
  `MambaModelConfig.verify_and_update_config` turns prefix caching off for hybrid models
  (so `mamba_cache_mode` is `none`); `HybridAttentionMambaModelConfig` /
  `Platform._align_hybrid_block_size` raise the attention block to a multiple of 16 tokens;
  `v1/core/kv_cache_utils.py` `_report_kv_cache_config` logs
  `GPU KV cache size` as `num_blocks // len(groups) × min(block_size)`;
  `Worker.determine_available_memory` does not subtract a CUDA-graph estimate.
- `vllm-0.33` (the default): prefix caching on by default puts hybrids in
  `mamba_cache_mode=align` (`MambaModelConfig.verify_and_update_config`);
  `_align_hybrid_block_size` raises the attention block to a multiple of a granule that is at
  least 128 tokens for MLA and, in align mode, is lcm'd with the linear-attention prefill
  kernel's checkpoint alignment (64 for Gated DeltaNet with FlashInfer's prefill on Hopper,
  `_resolve_gdn_prefill_backend`); `get_kv_cache_configs` keeps the null block out of the
  admission check; `kv_cache_utils.get_kv_cache_capacity` logs `GPU KV cache size` as
  `int(max_concurrency × max_model_len)`; the CUDA-graph estimate is subtracted from the
  available memory (default since v0.21); `gpu_memory_utilization` defaults to 0.92.

What each 0.33 rule rests on:
- MLA granule ≥ 128: `_align_hybrid_block_size` sets
  `kernel_block_alignment_size = max(kernel_block_alignment_size, 128)` when
  `model_config.use_mla` ("TRTLLM/FlashInfer MLA decode kernels require the physical number of
  kernel blocks to be aligned to 128 / kernel_block_size"), read in a patch anchored on it;
  a GLM-5.3-Flash deployment's 3,584-token block (TP 2, fp8) agrees.
- null block out of the admission check: `get_kv_cache_configs` and
  `check_enough_kv_cache_memory` (v1/core/kv_cache_planning.py) pass
  `available − _pool_bytes_per_block(groups)` to `_check_enough_kv_cache_memory`, read.
- ceil on requested memory: `v1/worker/utils.request_memory`,
  `math.ceil(total_memory × gpu_memory_utilization)`, read.
- 0.92: `vllm/config/cache.py`, `gpu_memory_utilization = Field(default=0.92, …)`, quoted by
  a deployment audit of the release (older releases: 0.9).
- GDN lcm 64 on Hopper: `_resolve_gdn_prefill_backend` (model_executor/layers/mamba/gdn/)
  does pick FlashInfer's prefill on SM90 (and on SM10.x with head_k_dim 128 and CUDA ≥ 13);
  the lcm with its 64-token checkpoint in `_align_hybrid_block_size` comes from the oracle
  notes, not from source kvledger could read, and is applied on Hopper only.

>>> r13, r33 = RULES["vllm-0.13"], RULES["vllm-0.33"]
>>> r13.hybrid_prefix_caching_default, r33.hybrid_prefix_caching_default
(False, True)
>>> r13.logged_tokens, r33.logged_tokens
(<LoggedTokens.BLOCKS_PER_GROUP: 'num_blocks // groups × block_size'>, <LoggedTokens.CONCURRENCY: 'int(concurrency × max_model_len)'>)
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from kvledger.core.gpus import GPU, GpuArch
from kvledger.core.registry import RuleRegistry
from kvledger.core.units import GiB


class LoggedTokens(Enum):
    """How a release derives the `GPU KV cache size: N tokens` line."""

    BLOCKS_PER_GROUP = "num_blocks // groups × block_size"
    CONCURRENCY = "int(concurrency × max_model_len)"


class MambaCacheMode(Enum):
    """`--mamba-cache-mode` (vllm/config/cache.py, MambaCacheMode)."""

    NONE = "none"  # one state block per request and group; no prefix caching of states
    ALIGN = "align"  # prefix caching: states checkpointed at block boundaries


@dataclass(frozen=True, slots=True, kw_only=True)
class VllmRules:
    name: str
    # EngineArgs default of --gpu-memory-utilization
    default_gpu_memory_utilization: float
    # Whether a hybrid model gets prefix caching (and so mamba_cache_mode align) by default.
    hybrid_prefix_caching_default: bool
    # Mamba cache modes the release accepts for a hybrid model.
    mamba_cache_modes: frozenset[MambaCacheMode]
    # Smallest block the attention kernels take (FlashAttention / FlashInfer: multiples of 16).
    kernel_block_tokens: int = 16
    # MLA layers: the hybrid block granule is at least this many tokens (None: no floor).
    mla_granule_floor_tokens: int | None
    # In align mode, the granule is lcm'd with the GDN prefill kernel's checkpoint alignment on
    # these GPU architectures (None: not in this release).
    gdn_align_checkpoint_tokens: int | None
    gdn_align_archs: frozenset[GpuArch] = frozenset()
    logged_tokens: LoggedTokens
    # get_kv_cache_configs: the admission check plans against usable blocks (null block out).
    check_reserves_null_block: bool
    # Worker.determine_available_memory subtracts the CUDA-graph memory estimate.
    subtracts_cudagraph_estimate: bool
    # requested_memory = ceil(total × utilization) (True) or int(total × utilization).
    requested_memory_ceil: bool
    # EngineArgs._set_default_args: --max-num-seqs for the OpenAI server is 1024 on GPUs with
    # at least 70 GiB that are not A100s, 256 otherwise.
    large_gpu_max_num_seqs: int = 1024
    small_gpu_max_num_seqs: int = 256

    def default_max_num_seqs(self, gpu: GPU | None) -> int:
        """--max-num-seqs when unset; without a GPU, the large-GPU default."""
        if gpu is not None and (gpu.memory_bytes < 70 * GiB or "A100" in gpu.name.upper()):
            return self.small_gpu_max_num_seqs
        return self.large_gpu_max_num_seqs

    def granule_tokens(self, *, user_block: int | None, mla: bool, align: bool,
                       gdn: bool, arch: GpuArch | None) -> int:
        """The multiple the hybrid attention block is raised in (`_align_hybrid_block_size`)."""
        from math import lcm

        granule = max(self.kernel_block_tokens, user_block or 0)
        if mla and self.mla_granule_floor_tokens is not None:
            granule = max(granule, self.mla_granule_floor_tokens)
        if (align and gdn and self.gdn_align_checkpoint_tokens is not None
                and arch in self.gdn_align_archs):
            granule = lcm(granule, self.gdn_align_checkpoint_tokens)
        return granule


RULES: RuleRegistry[VllmRules] = RuleRegistry(
    (
        VllmRules(
            name="vllm-0.13",
            default_gpu_memory_utilization=0.9,
            hybrid_prefix_caching_default=False,
            mamba_cache_modes=frozenset({MambaCacheMode.NONE}),
            mla_granule_floor_tokens=None,
            gdn_align_checkpoint_tokens=None,
            logged_tokens=LoggedTokens.BLOCKS_PER_GROUP,
            check_reserves_null_block=False,
            subtracts_cudagraph_estimate=False,
            requested_memory_ceil=False,
        ),
        VllmRules(
            name="vllm-0.33",
            default_gpu_memory_utilization=0.92,
            hybrid_prefix_caching_default=True,
            mamba_cache_modes=frozenset({MambaCacheMode.NONE, MambaCacheMode.ALIGN}),
            mla_granule_floor_tokens=128,
            gdn_align_checkpoint_tokens=64,
            gdn_align_archs=frozenset({GpuArch.HOPPER}),
            logged_tokens=LoggedTokens.CONCURRENCY,
            check_reserves_null_block=True,
            subtracts_cudagraph_estimate=True,
            requested_memory_ceil=True,
        ),
    ),
    default="vllm-0.33",
    hint=" for --engine vllm",
)
DEFAULT_VLLM_RULES = RULES.default
get_vllm_rules = RULES.lookup
