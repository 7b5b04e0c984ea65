"""vLLM rule sets: what changed between the releases kvledger emulates, as data.

Each field answers one question the planner asks; code never compares version strings.
Sources (files under `vllm/` of each release):

- `vllm-0.13` (the 0.10–0.13 line): `model_executor/models/config.py`
  `MambaModelConfig.verify_and_update_config` turns prefix caching off for hybrid models
  (so `mamba_cache_mode` is `none`); `HybridAttentionMambaModelConfig` /
  `Platform._align_hybrid_block_size` raise the attention block to a multiple of 16 tokens,
  64 for MLA layers (`kernel_block_alignment_size = 128 if use_cutlass_mla else 64`, read in
  v0.13.0; v0.11.0 has no MLA hybrid: Kimi-Linear, the first, arrived after it);
  `v1/core/kv_cache_utils.py` `_report_kv_cache_config` logs
  `GPU KV cache size` as `num_blocks // len(groups) × min(block_size)`;
  `Worker.determine_available_memory` does not subtract a CUDA-graph estimate.
- `vllm-0.24` (v0.24.0–v0.26.0, read in each wheel's source): a hybrid gets no prefix caching
  by default (`ModelConfig.is_prefix_caching_supported` is False for attn_type "hybrid" until
  v0.27.0); `--enable-prefix-caching` puts it in `mamba_cache_mode=align`; `_align_hybrid_block_size` raises the attention
  block to a multiple of max(smallest kernel block, --block-size), no MLA floor and no
  checkpoint lcm; `MambaSpec.max_memory_usage_bytes` is page × (2 + num_speculative_blocks) in
  align mode (the class has no num_prefill_checkpoint_blocks); the token line is
  `int(max_concurrency × max_model_len)` (`get_kv_cache_capacity`, v1/core/kv_cache_utils.py);
  `gpu_memory_utilization` 0.92 (config/cache.py); its MLA backends (`MLA_CHOICES_024`:
  sparse MLA is FlashMLA's on SM90, and the first backend's preferred block is the block).
  Like 0.13, its `kda_state_shape` drops num_spec (no speculative conv rows for KDA).
  Checked against vLLM 0.24.0's own planning on 200 deployments (tests/oracle). (Its `all`
  mode is not modelled.) Pipeline stages as 0.33; DCP and PCP as `context_parallel.CP_024`
  (no sparse-MLA or FlashInfer-MLA impl returns the LSE DCP needs, no impl takes PCP, no
  hybrid takes DCP).
- `vllm-0.27` (v0.27.0–v0.31.0): as 0.24, plus prefix caching on by default for hybrids and
  the MLA granule floor of 128 tokens
  (`kernel_block_alignment_size = max(kernel_block_alignment_size, 128)` from v0.27.0).
  v0.29.0 adds `MambaSpec.num_prefill_checkpoint_blocks`, set only by Kimi-K3's KDA there.
  No MLA backend table (not checked against these releases' planning): FlashMLA's 64 block.
- `vllm-0.32` (v0.32.0): Mamba2 mixers and GLM-5.3-Flash's KDA (FlashKDA) set one prefill
  checkpoint block (`MambaMixer2.get_kv_cache_spec`, models/glm5next/common/kda.py); the
  aligned block is a multiple of every attention backend's smallest kernel block
  (`backend_block_alignment` in `_align_hybrid_block_size`).
- `vllm-0.33` (the default, v0.33.0): Gated DeltaNet with the FlashInfer prefill sets one too
  (`QwenGatedDeltaNetAttention.get_kv_cache_spec`), and in align mode the block granule is
  lcm'd with the layers' checkpoint alignment (`_align_hybrid_block_size`,
  `get_mamba_prefill_checkpoint_alignment`); `get_kv_cache_configs` keeps the null block out
  of the admission check; the CUDA-graph estimate is subtracted from the available memory
  (default since v0.21); `request_memory` takes the ceiling. Who exports a checkpoint on which
  GPU: `kvledger.vllm.checkpoint`. Pipeline stages (`kvledger.vllm.pipeline`) and DCP / PCP
  (`context_parallel.CP_033`) were read in this release and checked on its own planning
  (tests/data/oracle/vllm-0.33.0-scale-out.jsonl); the other rule sets refuse them.

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
- checkpoint blocks and the lcm: `MambaSpec.max_memory_usage_bytes`
  (v1/kv_cache_interface.py) and `_align_hybrid_block_size` (platforms/interface.py), read in
  the v0.33.0 wheel; the releases where each exporter appears, in the v0.24.0–v0.33.0 wheels.

>>> r13, r33 = RULES["vllm-0.13"], RULES["vllm-0.33"]
>>> RULES.names
('vllm-0.13', 'vllm-0.24', 'vllm-0.27', 'vllm-0.32', 'vllm-0.33')
>>> r13.hybrid_prefix_caching_default, r33.hybrid_prefix_caching_default
(False, True)
>>> r13.logged_tokens, r33.logged_tokens
(<LoggedTokens.BLOCKS_PER_GROUP: 'num_blocks // groups × block_size'>, <LoggedTokens.CONCURRENCY: 'int(concurrency × max_model_len)'>)
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from kvledger.core.gpus import GPU
from kvledger.core.registry import RuleRegistry
from kvledger.core.units import GiB
from kvledger.model.arch import Family, LinearKind
from kvledger.vllm.backends import MLA_CHOICES_024, MLA_CHOICES_033, MlaChoice
from kvledger.vllm.checkpoint import CheckpointExporter
from kvledger.vllm.context_parallel import CP_024, CP_033, ContextParallelRules


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
    # The 0.x minor releases whose source this rule set was read from (first, last); patch
    # releases are assumed to keep their minor's rules.
    releases: tuple[int, int]
    # EngineArgs default of --gpu-memory-utilization
    default_gpu_memory_utilization: float
    # Whether a hybrid model gets prefix caching (and so mamba_cache_mode align) by default.
    hybrid_prefix_caching_default: bool
    # Mamba cache modes the release accepts for a hybrid model.
    mamba_cache_modes: frozenset[MambaCacheMode]
    # --enable-prefix-caching on a hybrid whose model class lacks Mamba prefix-caching support
    # is turned off with "…without support for prefix caching: disabling." and vLLM starts
    # (0.13's MambaModelConfig.verify_and_update_config); the classes that have it keep an
    # experimental mode kvledger does not model (mamba_block_size = block_size).
    disables_unsupported_prefix_caching: bool = False
    mamba_prefix_caching_families: frozenset[Family] = frozenset()
    # State kinds whose conv state gets no rows for the speculative tokens
    # (`MambaStateShapeCalculator`, model_executor/layers/mamba/mamba_utils.py):
    # `mamba1_state_shape` takes no num_spec in any release read; `kda_state_shape` takes
    # num_spec and drops it up to v0.26.0 (conv state K − 1 rows), adds it from v0.27.0.
    conv_without_spec_rows: frozenset[LinearKind] = frozenset({LinearKind.MAMBA1})
    # Smallest block the attention kernels take (FlashAttention / FlashInfer: multiples of 16).
    kernel_block_tokens: int = 16
    # MLA layers: the hybrid block granule is at least this many tokens (None: no floor).
    mla_granule_floor_tokens: int | None
    # State layers that set MambaSpec.num_prefill_checkpoint_blocks = 1 (kvledger.vllm.checkpoint).
    checkpoint_exporters: frozenset[CheckpointExporter] = frozenset()
    # In align mode the granule is lcm'd with the layers' prefill checkpoint alignment.
    granule_lcm_checkpoint: bool = False
    # The aligned block is rounded up to the lcm of every non-SSM attention backend's smallest
    # kernel block (`backend_block_alignment` in `_align_hybrid_block_size`, from v0.32.0).
    block_multiple_of_backends: bool = False
    # CUDA runtime major vLLM's kernel choices see (the release's default wheel).
    cuda_runtime_major: int = 13
    # MLA attention backends in priority order (kvledger.vllm.backends); empty: FlashMLA's
    # 64-token block on every GPU, the rule kvledger applied before the table was read.
    mla_backends: tuple[MlaChoice, ...] = ()
    # Sparse MLA's block is the backend's preferred one (v0.24.0: the first backend decides,
    # `backend_cls.get_preferred_block_size`); False: 64, every backend's common size with the
    # indexer's (0.33's `_preferred_block_size_for_backends` over all of them).
    sparse_block_from_backend: bool = False
    # Sparse MLA under --block-size: (compute capability major, the multiple of tokens some
    # sparse backend on it takes). The user's block is kept (`update_block_size_for_backend`,
    # platforms/interface.py, skips its phase 1 when `user_specified_block_size`) and selects
    # the backend: `AttentionBackend.supports_block_size` (v1/attention/backend.py) takes any
    # multiple of a kernel block, and `CudaPlatform.get_attn_backend_cls` (platforms/cuda.py)
    # refuses with "No valid attention backend found" when no sparse backend of the GPU's
    # `_get_backend_priorities` does. Empty: a rule set not checked; the block stays 64.
    sparse_user_block_multiples: tuple[tuple[int, int], ...] = ()
    # Model classes whose verify_and_update_config makes `--kv-cache-dtype auto` fp8 on SM10x
    # (model_executor/models/config.py), with the dtype they set.
    auto_kv_fp8_on_sm100: tuple[tuple[Family, str], ...] = ()
    logged_tokens: LoggedTokens
    # get_kv_cache_configs: the admission check plans against usable blocks (null block out).
    check_reserves_null_block: bool
    # Worker.determine_available_memory subtracts the CUDA-graph memory estimate.
    subtracts_cudagraph_estimate: bool
    # requested_memory = ceil(total × utilization) (True) or int(total × utilization).
    requested_memory_ceil: bool
    # --pipeline-parallel-size > 1 (kvledger.vllm.pipeline), read in this release's planning.
    pipeline_parallel: bool = False
    # DCP and PCP (kvledger.vllm.context_parallel); None: not read for this release.
    context_parallel: ContextParallelRules | None = None
    # EngineArgs._set_default_args: --max-num-seqs for the OpenAI server is 1024 on GPUs with
    # at least 70 GiB that are not A100s, 256 otherwise.
    large_gpu_max_num_seqs: int = 1024
    small_gpu_max_num_seqs: int = 256
    # EngineArgs.get_batch_defaults (vllm/engine/arg_utils.py), the OpenAI server's token
    # budget per step (--max-num-batched-tokens) by the same GPU classes.
    large_gpu_max_num_batched_tokens: int = 8192
    small_gpu_max_num_batched_tokens: int = 2048

    @staticmethod
    def _large(gpu: GPU | None) -> bool:
        return gpu is None or (gpu.memory_bytes >= 70 * GiB and "A100" not in gpu.name.upper())

    def default_max_num_seqs(self, gpu: GPU | None) -> int:
        """--max-num-seqs when unset; without a GPU, the large-GPU default."""
        return self.large_gpu_max_num_seqs if self._large(gpu) else self.small_gpu_max_num_seqs

    def default_max_num_batched_tokens(self, gpu: GPU | None) -> int:
        """--max-num-batched-tokens when unset; without a GPU, the large-GPU default."""
        return (self.large_gpu_max_num_batched_tokens if self._large(gpu)
                else self.small_gpu_max_num_batched_tokens)

    def covers(self, minor: int) -> bool:
        """Whether v0.<minor>.x lies in the releases this rule set was read from."""
        return self.releases[0] <= minor <= self.releases[1]

    def granule_tokens(self, *, user_block: int | None, mla: bool, align: bool,
                       checkpoint_tokens: int | None) -> int:
        """The multiple the hybrid attention block is raised in (`_align_hybrid_block_size`)."""
        from math import lcm

        granule = max(self.kernel_block_tokens, user_block or 0)
        if mla and self.mla_granule_floor_tokens is not None:
            granule = max(granule, self.mla_granule_floor_tokens)
        if align and self.granule_lcm_checkpoint and checkpoint_tokens:
            granule = lcm(granule, checkpoint_tokens)
        return granule


_ALIGN_MODES = frozenset({MambaCacheMode.NONE, MambaCacheMode.ALIGN})
_LATER = dict(default_gpu_memory_utilization=0.92, hybrid_prefix_caching_default=True,
              mamba_cache_modes=_ALIGN_MODES, logged_tokens=LoggedTokens.CONCURRENCY,
              check_reserves_null_block=True, subtracts_cudagraph_estimate=True,
              requested_memory_ceil=True)
# v0.13.0 and v0.24.0–v0.26.0: kda_state_shape(…, num_spec) returns conv_kernel_size − 1 rows.
_NO_KDA_SPEC_ROWS = frozenset({LinearKind.MAMBA1, LinearKind.KDA})
# Checked with each release's own planning (tests/data/oracle/vllm-*-block-size.jsonl).
_SPARSE_USER_BLOCKS = ((9, 64), (10, 32), (12, 64))
_EXPORTERS_032 = frozenset({CheckpointExporter.MAMBA2, CheckpointExporter.KDA_FLASHKDA})

RULES: RuleRegistry[VllmRules] = RuleRegistry(
    (
        VllmRules(
            name="vllm-0.13",
            releases=(10, 13),
            default_gpu_memory_utilization=0.9,
            hybrid_prefix_caching_default=False,
            mamba_cache_modes=frozenset({MambaCacheMode.NONE}),
            disables_unsupported_prefix_caching=True,
            # the model classes implementing SupportsMambaPrefixCaching in v0.13.0
            # (nemotron_h.py, jamba.py, falcon_h1.py, granitemoehybrid.py, …)
            mamba_prefix_caching_families=frozenset({Family.NEMOTRON_H, Family.JAMBA,
                                                     Family.FALCON_H1,
                                                     Family.GRANITE_MOE_HYBRID}),
            # HybridAttentionMambaModelConfig.verify_and_update_config: MLA layers align the
            # block to 64 (CUTLASS MLA, not modelled: 128); a Kimi-Linear boot of Nov 2025
            # logs 960-token blocks (vllm#28228, tests/logs/test_real_excerpts.py)
            mla_granule_floor_tokens=64,
            conv_without_spec_rows=_NO_KDA_SPEC_ROWS,
            logged_tokens=LoggedTokens.BLOCKS_PER_GROUP,
            check_reserves_null_block=False,
            subtracts_cudagraph_estimate=False,
            requested_memory_ceil=False,
        ),
        VllmRules(name="vllm-0.24", releases=(24, 26), mla_granule_floor_tokens=None,
                  mla_backends=MLA_CHOICES_024, sparse_block_from_backend=True,
                  # FLASHMLA_SPARSE MultipleOf(64); SM100 adds FLASHINFER_MLA_SPARSE's [32, 64]
                  sparse_user_block_multiples=_SPARSE_USER_BLOCKS,
                  conv_without_spec_rows=_NO_KDA_SPEC_ROWS,
                  pipeline_parallel=True, context_parallel=CP_024,
                  **{**_LATER, "hybrid_prefix_caching_default": False}),
        VllmRules(name="vllm-0.27", releases=(27, 31), mla_granule_floor_tokens=128,
                  **_LATER),
        VllmRules(name="vllm-0.32", releases=(32, 32), mla_granule_floor_tokens=128,
                  checkpoint_exporters=_EXPORTERS_032, block_multiple_of_backends=True,
                  **_LATER),
        VllmRules(name="vllm-0.33", releases=(33, 33), mla_granule_floor_tokens=128,
                  checkpoint_exporters=_EXPORTERS_032 | {CheckpointExporter.GDN_FLASHINFER},
                  granule_lcm_checkpoint=True, block_multiple_of_backends=True,
                  mla_backends=MLA_CHOICES_033,
                  # FLASH_ATTN_MLA_SPARSE / FLASHMLA_SPARSE / FLASHINFER_MLA_SPARSE_SM90{,SM120}
                  # MultipleOf(64); SM100 adds FLASHINFER_MLA_SPARSE's MultipleOf(32)
                  sparse_user_block_multiples=_SPARSE_USER_BLOCKS,
                  # GlmMoeDsaForCausalLM / Glm5NextModelConfig.verify_and_update_config
                  auto_kv_fp8_on_sm100=((Family.GLM_MOE_DSA, "fp8_e4m3"),
                                        (Family.GLM5_NEXT, "fp8")),
                  pipeline_parallel=True, context_parallel=CP_033,
                  **_LATER),
    ),
    default="vllm-0.33",
    hint=" for --engine vllm",
)
DEFAULT_VLLM_RULES = RULES.default
get_vllm_rules = RULES.lookup
