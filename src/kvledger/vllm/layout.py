"""VllmLayout: a model on a vLLM deployment, every default resolved the way vLLM resolves it.

Decisions, in vLLM's order:
1–2. max_model_len, prefix caching and mamba_cache_mode, the rule set's defaults
   (kvledger.vllm.resolve); the MLA backend of the rule set's table (kvledger.vllm.backends).
3. Per-layer specs (kvledger.vllm.layers), sharded by --tensor-parallel-size.
4. Block size: --block-size or the CUDA default (16; 64 for MLA without Mamba layers, the
   FlashMLA block; always 64 for sparse MLA, FlashMLASparse), then for hybrids
   `_align_hybrid_block_size` (kvledger.vllm.align) and the Mamba page padded to the
   attention page (sparse MLA: the latent page; the indexer row is not counted there).
5. KV-cache groups (kvledger.vllm.groups): sparse MLA puts latent and indexer layers in one
   group of mixed pages; GLM-5.3-Flash adds its state groups and the kpool tail.

>>> from kvledger.model.config import load_model
>>> from kvledger.vllm.rules import RULES
>>> lay = vllm_layout(load_model("qwen3-next-80b-a3b-instruct"),
...                   VllmDeployment(tensor_parallel_size=2), RULES["vllm-0.13"])
>>> lay.block_tokens, lay.page_bytes, len(lay.groups), lay.bytes_per_block
(544, 557056, 4, 6684672)
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kvledger.core.errors import DeploymentError
from kvledger.core.gpus import GPU
from kvledger.core.units import cdiv, round_up
from kvledger.model.arch import AttnKind, LinearKind, ModelArch, ShardingError
from kvledger.vllm.align import BlockAlignment, align_block
from kvledger.vllm.backends import MlaBackend, block_stride_alignment_bytes, mla_backend_for
from kvledger.vllm.checkpoint import prefill_checkpoint
from kvledger.vllm.deploy import KV_CACHE_DTYPES, VllmDeployment
from kvledger.vllm.groups import KVCacheGroup, glm5_next_groups, group_size, kv_cache_groups
from kvledger.vllm.layers import (
    MODEL_ITEMSIZE,
    SSM_DTYPE_RULE,
    AttentionLayer,
    IndexerLayer,
    MambaLayer,
    state_itemsizes,
)
from kvledger.vllm.resolve import resolve_deployment
from kvledger.vllm.rules import MambaCacheMode, VllmRules

CUDA_DEFAULT_BLOCK = 16  # CudaPlatform.check_and_update_config when --block-size is unset
FLASHMLA_BLOCK = 64  # FlashMLA's only block size
# CudaPlatform.check_and_update_config: "Forcing kv cache block size to 64 for FlashMLASparse
# backend" whenever the config has `index_topk` (sparse MLA), whatever --block-size says.
FLASHMLA_SPARSE_BLOCK = 64


@dataclass(frozen=True, slots=True, kw_only=True)
class VllmLayout:
    model: ModelArch
    deployment: VllmDeployment  # defaults resolved
    rules: VllmRules
    gpu: GPU | None
    max_model_len: int
    prefix_caching: bool
    mamba_cache_mode: MambaCacheMode | None  # None: not a hybrid
    attention: AttentionLayer
    mamba: MambaLayer | None
    alignment: BlockAlignment | None  # None: no Mamba layers
    groups: tuple[KVCacheGroup, ...]
    notes: tuple[str, ...] = ()
    # Sparse MLA (DSA): the indexer k cache of each layer that owns an indexer; its layers sit
    # in the attention group (UniformTypeKVCacheSpecs), each with its own page.
    indexer: IndexerLayer | None = None
    num_indexer_layers: int = 0
    # GLM-5.3-Flash's kpool tail: a one-block scratch group per request (KpoolTailSpec),
    # aliased onto the indexer pages.
    kpool_tail: bool = False
    # The MLA backend the rule set picks on the GPU (None: no table, or no MLA).
    mla_backend: MlaBackend | None = None
    # Block-outermost layouts (GLM-5.3-Flash) round a block to the lcm of every layer's
    # block-stride alignment (`_get_kv_cache_bytes_per_block`); 1: no rounding.
    block_stride_alignment_bytes: int = 1

    @property
    def block_tokens(self) -> int:
        return self.attention.block_tokens

    @property
    def page_bytes(self) -> int:
        """The one page size every layer shares after alignment and padding."""
        return self.attention.page_bytes

    @property
    def group_size(self) -> int:
        return group_size(list(self.groups))

    @property
    def indexer_block_bytes(self) -> int:
        """The indexer pages one block id spans (0 without sparse MLA)."""
        if self.indexer is None:
            return 0
        return self.num_indexer_layers * self.indexer.page_bytes

    @property
    def bytes_per_block(self) -> int:
        """`_get_kv_cache_bytes_per_block`: the largest group's summed per-layer pages.

        With sparse MLA the attention group is one UniformTypeKVCacheSpecs whose pages differ
        (latent and indexer rows), so a block spans Σ pages: MLA layers × latent page + indexer
        layers × indexer page. GLM-5.3-Flash's state and tail groups alias those tensors
        (`_glm5_next_tensor_layout`, v1/core/kv_cache_planning.py) and add nothing.
        """
        return round_up(self.group_size * self.page_bytes + self.indexer_block_bytes,
                        self.block_stride_alignment_bytes)

    def blocks_for_len(self, tokens: int) -> int:
        """Blocks one request of `tokens` tokens takes from the shared pool: Σ over groups of
        cdiv(max_memory_usage_bytes, page) (`get_max_concurrency_for_kv_cache_config`)."""
        total = 0
        for group in self.groups:
            if group.kind == "attention":
                total += cdiv(tokens, self.block_tokens)
            else:
                assert self.mamba is not None
                total += self.mamba.blocks_per_request
        if self.kpool_tail:
            total += 1  # KpoolTailSpec.max_admission_blocks_per_request
        return total

    def blocks_per_request(self) -> int:
        """Blocks of one max_model_len request."""
        return self.blocks_for_len(self.max_model_len)


def _attention(model: ModelArch, dep: VllmDeployment, backend: MlaBackend | None = None,
               sparse_block_from_backend: bool = False) -> AttentionLayer:
    itemsize = KV_CACHE_DTYPES[dep.kv_cache_dtype] or MODEL_ITEMSIZE
    tp = dep.tensor_parallel_size
    if model.attn is AttnKind.GQA:
        assert model.gqa is not None
        try:
            heads = model.gqa.kv_heads_per_rank(tp)
        except ShardingError as exc:
            raise DeploymentError(f"--tensor-parallel-size {tp}: {exc}") from None
        return AttentionLayer(mla=False, num_kv_heads=heads, head_size=model.gqa.head_dim,
                              itemsize=itemsize, block_tokens=CUDA_DEFAULT_BLOCK)
    assert model.mla is not None
    head = model.mla.kv_lora_rank + model.mla.qk_rope_head_dim
    if model.attn is AttnKind.MLA:
        # the backend's preferred block (get_preferred_block_size); FlashMLA's 64 without one
        return AttentionLayer(mla=True, num_kv_heads=1, head_size=head, itemsize=itemsize,
                              block_tokens=backend.preferred_block if backend else FLASHMLA_BLOCK)
    # DSA: the backend decides whether a row is the packed "fp8_ds_mla" one
    # (_canonicalize_sparse_mla_kv_cache_dtype); without a backend table any fp8 is.
    quantized = dep.kv_cache_dtype.startswith("fp8")
    if backend is None:
        packed = quantized
    else:
        packed = backend.ds_mla_when_quantized if quantized else backend.ds_mla_when_auto
    block = (backend.preferred_block if backend and sparse_block_from_backend
             else FLASHMLA_SPARSE_BLOCK)
    return AttentionLayer(mla=True, num_kv_heads=1, head_size=head,
                          itemsize=1 if packed else itemsize, block_tokens=block,
                          fp8_ds_mla=packed)


def _mamba(model: ModelArch, dep: VllmDeployment, align: bool) -> MambaLayer:
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
    # mamba1_state_shape takes no num_spec: a Mamba-1 conv state keeps K − 1 rows only.
    spec_rows = 0 if model.state.kind is LinearKind.MAMBA1 else spec
    return MambaLayer(shapes=((rows + spec_rows, channels), temporal), itemsizes=(conv_size, ssm_size),
                      block_tokens=0, spec_blocks=spec, align=align)


def _block_size(model: ModelArch, dep: VllmDeployment, attention: AttentionLayer,
                notes: list[str]) -> AttentionLayer:
    """Step 4 before alignment: the backend's forced block, --block-size, or the default."""
    if model.attn is AttnKind.DSA:
        if dep.block_size not in (None, FLASHMLA_SPARSE_BLOCK):
            notes.append(f"--block-size {dep.block_size}: vLLM forces 64 for the FlashMLASparse "
                         "backend (sparse MLA)")
        return attention
    if dep.block_size is not None:
        return replace(attention, block_tokens=dep.block_size)
    if model.is_hybrid:
        return replace(attention, block_tokens=CUDA_DEFAULT_BLOCK)
    return attention


def _aligned(model: ModelArch, dep: VllmDeployment, rules: VllmRules, gpu: GPU | None,
             attention: AttentionLayer, notes: list[str], backend: MlaBackend | None = None
             ) -> tuple[AttentionLayer, MambaLayer, BlockAlignment]:
    """Step 4 for a hybrid: the block aligned to the Mamba page, the page padded."""
    sparse = model.attn is AttnKind.DSA
    align = dep.mamba_cache_mode is MambaCacheMode.ALIGN
    mamba = _mamba(model, dep, align)
    # In align mode a layer that exports prefill checkpoints adds a block per request and, in
    # the releases that lcm it, its alignment to the granule (kvledger.vllm.checkpoint).
    checkpoint = prefill_checkpoint(model, gpu, rules) if align else None
    # The kernel block alignment is max(the backend's smallest kernel block, block_size):
    # FlashMLASparse takes 64 only, so the forced 64 acts as the user's block; a dense MLA
    # backend's smallest block (FLASHINFER_MLA 32, FLASHMLA 64) counts as one too.
    user_block = FLASHMLA_SPARSE_BLOCK if sparse else dep.block_size
    if backend is not None and not sparse:
        user_block = max(user_block or 0, backend.smallest_block)
    granule = rules.granule_tokens(
        user_block=user_block, mla=attention.mla,
        align=align, checkpoint_tokens=checkpoint.alignment_tokens if checkpoint else None)
    alignment = align_block(attn_bytes_per_token=attention.bytes_per_token,
                            mamba_page_bytes=mamba.real_page_bytes, granule_tokens=granule,
                            block_size=attention.block_tokens)
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


def _indexer(model: ModelArch, attention: AttentionLayer,
             notes: list[str]) -> tuple[IndexerLayer, int, bool]:
    """Sparse MLA: the indexer layer, how many layers own one, and the kpool tail."""
    assert model.indexer is not None
    indexer = IndexerLayer(head_dim=model.indexer.head_dim, block_tokens=attention.block_tokens,
                           tokens_per_state=model.indexer.kpool)
    num_indexer = sum(layer.has_indexer for layer in model.full_layers)
    tail = model.is_hybrid and model.indexer.kpool > 1
    if num_indexer < model.num_full_layers:
        notes.append(f"{num_indexer} of {model.num_full_layers} sparse-MLA layers own an "
                     "indexer; the shared (skip_topk) layers are counted without an indexer "
                     "cache")
    if tail:
        notes.append(f"kpool indexer ({model.indexer.kpool} tokens per index key): "
                     f"{indexer.block_tokens // model.indexer.kpool} index rows per block, "
                     "plus one tail block per request (KpoolTailSpec)")
    return indexer, num_indexer, tail


def vllm_layout(model: ModelArch, dep: VllmDeployment, rules: VllmRules,
                gpu: GPU | None = None) -> VllmLayout:
    """Resolve a vLLM deployment in the module doc's order; errors name the flag
    (DeploymentError)."""
    notes: list[str] = []
    dep = resolve_deployment(model, dep, rules, gpu, notes)
    backend = mla_backend_for(model, dep, rules, gpu)
    attention = _attention(model, dep, backend, rules.sparse_block_from_backend)
    if dep.num_speculative_tokens and model.num_draft_layers:
        notes.append(f"speculative decoding: the {model.num_draft_layers} MTP draft layer(s) "
                     "register KV-cache layers of their own in vLLM; kvledger counts only the "
                     "target model's layers and the extra state blocks")
    attention = _block_size(model, dep, attention, notes)
    mamba = alignment = None
    if model.is_hybrid:
        attention, mamba, alignment = _aligned(model, dep, rules, gpu, attention, notes,
                                               backend)
    indexer, num_indexer, tail = None, 0, False
    sparse = model.attn is AttnKind.DSA
    if sparse:
        indexer, num_indexer, tail = _indexer(model, attention, notes)
    if sparse and model.is_hybrid:
        groups = glm5_next_groups(num_mla=model.num_full_layers,
                                  num_mamba=model.num_linear_layers)
    else:
        counts = {"attention": model.num_full_layers}
        if model.is_hybrid:
            counts["mamba"] = model.num_linear_layers
        groups = kv_cache_groups(counts)
    assert dep.max_model_len is not None and dep.enable_prefix_caching is not None
    stride = 1
    if tail and backend is not None:  # GLM-5.3-Flash's block-outermost layout
        stride = block_stride_alignment_bytes(model, attention, backend)
    return VllmLayout(model=model, deployment=dep, rules=rules, gpu=gpu,
                      max_model_len=dep.max_model_len, prefix_caching=dep.enable_prefix_caching,
                      mamba_cache_mode=dep.mamba_cache_mode, attention=attention,
                      mamba=mamba, alignment=alignment, groups=tuple(groups),
                      notes=tuple(notes), indexer=indexer, num_indexer_layers=num_indexer,
                      kpool_tail=tail, mla_backend=backend, block_stride_alignment_bytes=stride)
