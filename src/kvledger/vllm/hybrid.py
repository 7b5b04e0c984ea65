"""Step 4 of a vLLM layout for a hybrid: the state layer, the block aligned to it, the page padded.

`Platform._align_hybrid_block_size` (vllm/platforms/interface.py) sizes the block from the
model class's state shape and a one-token attention spec (`AttentionLayer.align_bytes_per_token`),
raises it in the rule set's granule (kvledger.vllm.align) and, from v0.32.0, to a multiple of
every attention backend's smallest kernel block; the state page is then padded to
block × that row.

>>> from kvledger.model.config import load_model
>>> from kvledger.vllm.layers import AttentionLayer
>>> from kvledger.vllm.rules import RULES
>>> from kvledger.vllm.resolve import resolve_deployment
>>> model, rules = load_model("qwen3-next-80b-a3b-instruct"), RULES["vllm-0.13"]
>>> dep = resolve_deployment(model, VllmDeployment(tensor_parallel_size=2), rules, None, [])
>>> att = AttentionLayer(mla=False, num_kv_heads=1, head_size=256, itemsize=2, block_tokens=16)
>>> att, mamba, al = align_hybrid(model, dep, rules, None, att, [])
>>> att.block_tokens, mamba.real_page_bytes, mamba.page_bytes
(544, 548864, 557056)
"""

from __future__ import annotations

from dataclasses import replace
from math import lcm

from kvledger.core.errors import DeploymentError
from kvledger.core.gpus import GPU
from kvledger.model.arch import AttnKind, LinearKind, ModelArch, ShardingError
from kvledger.vllm.align import BlockAlignment, align_block
from kvledger.vllm.backends import (
    FLASHMLA_BLOCK,
    FLASHMLA_SPARSE_BLOCK,
    MlaBackend,
    indexer_kernel_blocks,
)
from kvledger.vllm.checkpoint import prefill_checkpoint
from kvledger.vllm.deploy import VllmDeployment
from kvledger.vllm.layers import SSM_DTYPE_RULE, AttentionLayer, MambaLayer, state_itemsizes
from kvledger.vllm.rules import MambaCacheMode, VllmRules


def _mamba(model: ModelArch, dep: VllmDeployment, align: bool, spec_rows: bool) -> MambaLayer:
    """The state layer; `spec_rows`: the conv state holds a row per speculative token."""
    assert model.state is not None
    if model.family not in SSM_DTYPE_RULE:
        raise DeploymentError(f"{model.name}: no vLLM state-dtype rule for family "
                              f"{model.family.value}")
    tp = dep.tensor_parallel_size
    try:
        rows, channels = model.state.conv_shape(tp)
        temporal = model.state.temporal_shape(tp)
    except ShardingError as exc:
        raise DeploymentError(f"--tensor-parallel-size {tp}: {exc}") from None
    conv_size, ssm_size = state_itemsizes(model.family, model.state.ssm_dtype_default,
                                          dep.mamba_cache_dtype, dep.mamba_ssm_cache_dtype)
    spec = dep.num_speculative_tokens
    rows += spec if spec_rows else 0
    return MambaLayer(shapes=((rows, channels), temporal), itemsizes=(conv_size, ssm_size),
                      block_tokens=0, spec_blocks=spec, align=align)


def align_hybrid(model: ModelArch, dep: VllmDeployment, rules: VllmRules, gpu: GPU | None,
             attention: AttentionLayer, notes: list[str], backend: MlaBackend | None = None
             ) -> tuple[AttentionLayer, MambaLayer, BlockAlignment]:
    """Step 4 for a hybrid: the block aligned to the Mamba page, the page padded."""
    sparse = model.attn is AttnKind.DSA
    align = dep.mamba_cache_mode is MambaCacheMode.ALIGN
    assert model.state is not None
    dropped = model.state.kind in rules.conv_without_spec_rows
    mamba = _mamba(model, dep, align, spec_rows=not dropped)
    # In align mode a layer that exports prefill checkpoints adds a block per request and, in
    # the releases that lcm it, its alignment to the granule (kvledger.vllm.checkpoint).
    checkpoint = prefill_checkpoint(model, gpu, rules) if align else None
    # The kernel block alignment is max(the backend's smallest kernel block, block_size):
    # sparse MLA's block (64, or the --block-size a sparse backend took) acts as the user's
    # block; a dense MLA backend's smallest block (FLASHINFER_MLA 32, FLASHMLA 64) counts too.
    kept = dep.block_size if rules.sparse_user_block_multiples else None
    user_block = (kept or FLASHMLA_SPARSE_BLOCK) if sparse else dep.block_size
    if backend is not None and not sparse:
        user_block = max(user_block or 0, backend.smallest_block)
    granule = rules.granule_tokens(
        user_block=user_block, mla=attention.mla,
        align=align, checkpoint_tokens=checkpoint.alignment_tokens if checkpoint else None)
    multiple = _backend_multiple(model, rules, gpu, backend)

    def aligned_to(state: MambaLayer) -> BlockAlignment:
        return align_block(attn_bytes_per_token=attention.align_bytes_per_token,
                           mamba_page_bytes=state.real_page_bytes, granule_tokens=granule,
                           block_size=attention.block_tokens, backend_multiple_tokens=multiple)

    alignment = aligned_to(mamba)
    if dropped and dep.num_speculative_tokens and model.state.kind is LinearKind.KDA:
        _note_kda_spec_rows(mamba, aligned_to(_mamba(model, dep, align, spec_rows=True)),
                            alignment, rules, notes)
    attention = replace(attention, block_tokens=alignment.block_tokens)
    assert dep.max_model_len is not None
    mamba = replace(mamba, block_tokens=alignment.block_tokens if align else dep.max_model_len,
                    page_size_padded=alignment.attn_page_bytes,
                    checkpoint_blocks=1 if checkpoint else 0)
    if gpu is None and align and rules.checkpoint_exporters and model.state is not None \
            and model.state.kind in (LinearKind.GDN, LinearKind.KDA):
        notes.append("no --gpu: the prefill kernel, and so the prefill checkpoint alignment "
                     "and block, depends on the GPU; none is assumed")
    return attention, mamba, alignment


def _backend_multiple(model: ModelArch, rules: VllmRules, gpu: GPU | None,
                      backend: MlaBackend | None) -> int:
    """`backend_block_alignment`: lcm of the smallest kernel block of each non-SSM backend
    (`_find_non_ssm_backends`): the attention backend's, and for a kpool indexer
    (GLM-5.3-Flash) `Glm5NextIndexerBackend`'s; the kpool tail's MultipleOf(1) adds nothing."""
    if not rules.block_multiple_of_backends:
        return 1
    if backend is not None:
        smallest = [backend.smallest_block]
    elif model.attn is AttnKind.GQA:
        smallest = [rules.kernel_block_tokens]
    else:
        smallest = [FLASHMLA_BLOCK]  # FlashMLA's and FlashMLASparse's only block
    if model.indexer is not None and model.indexer.kpool > 1:
        smallest.append(min(indexer_kernel_blocks(model.indexer.kpool, gpu)))
    return lcm(*smallest)


def _note_kda_spec_rows(mamba: MambaLayer, corrected: BlockAlignment, alignment: BlockAlignment,
                        rules: VllmRules, notes: list[str]) -> None:
    """The release's KDA state beside the one with speculative rows (v0.27.0's shape).

    v0.13.0 and v0.24.0–v0.26.0: `MambaStateShapeCalculator.kda_state_shape`
    (model_executor/layers/mamba/mamba_utils.py) takes num_spec and drops it, though the model
    class passes it (`KimiLinearForCausalLM.get_mamba_state_shape_from_config`); the KDA
    forward there has no speculative conv path (`KimiGatedDeltaNetAttention.forward` decodes
    through the non-spec state indices only). v0.27.0 adds the rows and the path."""
    rows, channels = mamba.shapes[0]
    notes.append(
        f"{rules.name}: kda_state_shape drops num_spec, so the KDA conv state keeps {rows} rows "
        f"× {channels}, none for the {mamba.spec_blocks} speculative tokens (fixed in v0.27.0); "
        f"with them the state would be {corrected.mamba_real_page_bytes:,} B and the block "
        f"{corrected.block_tokens} tokens, not {alignment.mamba_real_page_bytes:,} B and "
        f"{alignment.block_tokens}")
