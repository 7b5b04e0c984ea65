"""Prefill checkpoints: which state layers export a mid-prefill state, and what it costs.

In `mamba_cache_mode=align` a state layer that can write the block-boundary state from inside
one prefill forward pass says so on its spec: `MambaSpec.num_prefill_checkpoint_blocks` = 1
and a `prefill_checkpoint_alignment` in tokens (vllm/v1/kv_cache_interface.py). Two things
follow, each from the release that introduced it (the rule set's fields):

- one more block per request and state group: `MambaSpec.max_memory_usage_bytes` is
  page × (2 + num_speculative_blocks + num_prefill_checkpoint_blocks) in align mode
  (the field exists from v0.29.0; `VllmRules.checkpoint_exporters` lists who sets it);
- the hybrid block granule is lcm'd with the layers' alignment
  (`Platform._align_hybrid_block_size` calls `get_mamba_prefill_checkpoint_alignment`,
  model_executor/layers/mamba/abstract.py, from v0.33.0: `VllmRules.granule_lcm_checkpoint`).

Who exports, in vLLM 0.33 (files under `vllm/`):
- Mamba2: `MambaMixer2.get_kv_cache_spec` (model_executor/layers/mamba/mamba_mixer2.py)
  always, alignment 1 (from v0.32.0);
- Gated DeltaNet (Qwen3-Next, Qwen3.5): `QwenGatedDeltaNetAttention` when its prefill backend
  is FlashInfer (`_resolve_gdn_prefill_backend`, mamba/gdn/qwen_gdn_linear_attn.py): SM 9.0,
  or SM 10.x / 12.x with head_k_dim 128 and CUDA runtime ≥ 13; alignment 64
  (`FLASHINFER_GDN_CHECKPOINT_ALIGNMENT`, v1/attention/backends/gdn_attn.py) (from v0.33.0);
- GLM-5.3-Flash's KDA: `Glm5NextLinearAttention.get_kv_cache_spec`
  (models/glm5next/common/kda.py) when `_resolve_kda_prefill_backend` picks FlashKDA: CUDA
  SM 9.x / 10.x / 12.x, head_dim 128, bfloat16 activations and a bounded gate; alignment 16
  (`kda_prefill_checkpoint_alignment`, mamba/kda_checkpoint.py) (from v0.32.0);
- Kimi-Linear's KDA (`KimiGatedDeltaNetAttention`) and Mamba-1 (Jamba) never export.

Assumptions: the checkpoints kvledger embeds are bfloat16 and GLM-5.3-Flash's config bounds
its gate (`gate_lower_bound` -5.0); the CUDA runtime is the rule set's `cuda_runtime_major`.

>>> from kvledger.core.gpus import get_gpu
>>> from kvledger.model.config import load_model
>>> from kvledger.vllm.rules import RULES
>>> qwen = load_model("qwen3-next-80b-a3b-instruct")
>>> prefill_checkpoint(qwen, get_gpu("h200"), RULES["vllm-0.33"])
PrefillCheckpoint(exporter=<CheckpointExporter.GDN_FLASHINFER: 'Gated DeltaNet, FlashInfer prefill'>, alignment_tokens=64)
>>> prefill_checkpoint(qwen, get_gpu("h200"), RULES["vllm-0.24"]) is None
True
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from kvledger.model.arch import Family, LinearKind

if TYPE_CHECKING:
    from kvledger.core.gpus import GPU
    from kvledger.model.arch import ModelArch
    from kvledger.vllm.rules import VllmRules


class CheckpointExporter(Enum):
    """A state layer class that sets num_prefill_checkpoint_blocks (see the module doc)."""

    MAMBA2 = "Mamba2 mixer"
    GDN_FLASHINFER = "Gated DeltaNet, FlashInfer prefill"
    KDA_FLASHKDA = "GLM-5.3-Flash KDA, FlashKDA prefill"


# FLASHINFER_GDN_CHECKPOINT_ALIGNMENT (v1/attention/backends/gdn_attn.py) and
# kda_prefill_checkpoint_alignment("flashkda") (model_executor/layers/mamba/kda_checkpoint.py).
ALIGNMENT_TOKENS = {CheckpointExporter.MAMBA2: 1, CheckpointExporter.GDN_FLASHINFER: 64,
                    CheckpointExporter.KDA_FLASHKDA: 16}
# head_k_dim (GDN) / head_dim (KDA) the FlashInfer and FlashKDA prefill kernels take off Hopper
KERNEL_HEAD_DIM = 128


@dataclass(frozen=True, slots=True)
class PrefillCheckpoint:
    exporter: CheckpointExporter
    alignment_tokens: int


def _exporter(model: ModelArch, gpu: GPU | None, cuda_major: int) -> CheckpointExporter | None:
    state = model.state
    if state is None:
        return None
    if state.kind is LinearKind.MAMBA2:
        return CheckpointExporter.MAMBA2
    if gpu is None or gpu.arch.is_rocm:
        return None
    major, minor = gpu.compute_capability
    head_dim = state.temporal_dims[0]
    if state.kind is LinearKind.GDN:
        flashinfer = (major, minor) == (9, 0) or (
            major in (10, 12) and head_dim == KERNEL_HEAD_DIM and cuda_major >= 13)
        return CheckpointExporter.GDN_FLASHINFER if flashinfer else None
    if state.kind is LinearKind.KDA and model.family is Family.GLM5_NEXT:
        flashkda = major in (9, 10, 12) and head_dim == KERNEL_HEAD_DIM
        return CheckpointExporter.KDA_FLASHKDA if flashkda else None
    return None


def prefill_checkpoint(model: ModelArch, gpu: GPU | None,
                       rules: VllmRules) -> PrefillCheckpoint | None:
    """The checkpoint the model's state layers export under `rules` on `gpu`, or None."""
    exporter = _exporter(model, gpu, rules.cuda_runtime_major)
    if exporter is None or exporter not in rules.checkpoint_exporters:
        return None
    return PrefillCheckpoint(exporter=exporter, alignment_tokens=ALIGNMENT_TOKENS[exporter])
