"""VllmLayout: a model on a vLLM deployment, every default resolved the way vLLM resolves it.

Decisions, in vLLM's order:
1–2. max_model_len, prefix caching and mamba_cache_mode, the rule set's defaults
   (kvledger.vllm.resolve); the MLA backend of the rule set's table (kvledger.vllm.backends).
3. Per-layer specs (kvledger.vllm.layers), sharded by --tensor-parallel-size.
4. Block size: --block-size or the CUDA default (16; 64 for MLA without Mamba layers, the
   FlashMLA block; 64 for sparse MLA, whose --block-size must be a multiple of a sparse
   backend's kernel block), then for hybrids
   `_align_hybrid_block_size` (kvledger.vllm.align) and the Mamba page padded to the
   attention page (sparse MLA: the latent page; the indexer row is not counted there).
5. KV-cache groups (kvledger.vllm.groups): sparse MLA puts latent and indexer layers in one
   group of mixed pages; GLM-5.3-Flash adds its state groups and the kpool tail.
A stage of --pipeline-parallel-size is the layout cut to its layers (`kvledger.vllm.stages`);
under DCP an attention group counts one rank's tokens (`kvledger.vllm.context_parallel`).

>>> from kvledger.model.config import load_model
>>> from kvledger.vllm.rules import RULES
>>> lay = vllm_layout(load_model("qwen3-next-80b-a3b-instruct"),
...                   VllmDeployment(tensor_parallel_size=2), RULES["vllm-0.13"])
>>> lay.block_tokens, lay.page_bytes, len(lay.groups), lay.bytes_per_block
(544, 557056, 4, 6684672)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from kvledger.core.errors import DeploymentError
from kvledger.core.gpus import GPU
from kvledger.core.units import cdiv, round_up
from kvledger.model.arch import AttnKind, LayerKind, ModelArch, ShardingError
from kvledger.vllm.align import BlockAlignment
from kvledger.vllm.backends import (
    FLASHMLA_BLOCK,
    FLASHMLA_SPARSE_BLOCK,
    MlaBackend,
    block_stride_alignment_bytes,
    mla_backend_for,
)
from kvledger.vllm.context_parallel import local_tokens
from kvledger.vllm.deploy import KV_CACHE_DTYPES, VllmDeployment
from kvledger.vllm.groups import KVCacheGroup, group_size, kv_cache_groups, sparse_hybrid_groups
from kvledger.vllm.hybrid import align_hybrid
from kvledger.vllm.layers import (
    MODEL_ITEMSIZE,
    AttentionLayer,
    IndexerLayer,
    KpoolTailLayer,
    MambaLayer,
)
from kvledger.vllm.resolve import resolve_deployment
from kvledger.vllm.rules import MambaCacheMode, VllmRules

if TYPE_CHECKING:
    from kvledger.vllm.stages import StageRange

CUDA_DEFAULT_BLOCK = 16  # CudaPlatform.check_and_update_config when --block-size is unset


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
    # GLM-5.3-Flash's kpool tail: a one-block ring per request in a group of its own
    # (Glm5NextTailCache), `tail_page_bytes` per indexer layer.
    kpool_tail: bool = False
    tail_page_bytes: int = 0
    # The MLA backend the rule set picks on the GPU (None: no table, or no MLA).
    mla_backend: MlaBackend | None = None
    # Block-outermost layouts (GLM-5.3-Flash) round a block to the lcm of every layer's
    # block-stride alignment (`_get_kv_cache_bytes_per_block`); 1: no rounding.
    block_stride_alignment_bytes: int = 1
    # The pipeline stage this layout is cut to (kvledger.vllm.stages); None: every layer.
    stage: StageRange | None = None

    @property
    def dcp_size(self) -> int:  # ranks sharing each request's tokens
        return self.deployment.decode_context_parallel_size

    @property
    def block_tokens(self) -> int:
        return self.attention.block_tokens

    @property
    def page_bytes(self) -> int:
        """The attention (latent) page. A state page is padded to block × the row the
        alignment sizes from (`AttentionLayer.align_bytes_per_token`), the same page but for
        fp8_ds_mla rows: there the state page is smaller (`mamba.page_bytes`)."""
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

    def group_bytes(self, group: KVCacheGroup) -> int:
        """Σ the pages of a group's layers in one block: with sparse MLA the attention group is
        one UniformTypeKVCacheSpecs of latent and indexer pages."""
        if group.kind == "attention":
            return group.num_layers * self.page_bytes + self.indexer_block_bytes
        assert self.mamba is not None
        return group.num_layers * self.mamba.page_bytes

    @property
    def bytes_per_block(self) -> int:
        """`_get_kv_cache_bytes_per_block` (v1/core/kv_cache_planning.py): the largest group's
        summed per-layer pages (the kpool tail's group among them), rounded up to the lcm of
        the layers' block-stride alignments. Every group's tensor spans the same blocks from
        byte 0 (`get_kv_cache_config_from_groups`), so the narrower groups add nothing."""
        widest = max(max(self.group_bytes(g) for g in self.groups),
                     self.num_indexer_layers * self.tail_page_bytes)
        return round_up(widest, self.block_stride_alignment_bytes)

    def blocks_for_len(self, tokens: int) -> int:
        """Blocks one request of `tokens` tokens takes from the shared pool: Σ over groups of
        cdiv(max_memory_usage_bytes, page) (`get_max_concurrency_for_kv_cache_config`); an
        attention group holds the tokens of one DCP rank, cdiv(tokens, dcp)."""
        total = 0
        for group in self.groups:
            if group.kind == "attention":
                total += cdiv(local_tokens(tokens, self.dcp_size), self.block_tokens)
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


def _sparse_user_block(dep: VllmDeployment, rules: VllmRules, gpu: GPU | None) -> int:
    """A sparse-MLA --block-size vLLM keeps, or DeploymentError where no sparse backend takes
    it (`rules.sparse_user_block_multiples`). Without a GPU, any GPU's multiple will do.

    >>> from kvledger.core.gpus import get_gpu
    >>> from kvledger.vllm.rules import RULES
    >>> _sparse_user_block(VllmDeployment(block_size=32), RULES["vllm-0.33"], get_gpu("b200"))
    32
    """
    assert dep.block_size is not None
    table = dict(rules.sparse_user_block_multiples)
    if gpu is not None and not gpu.arch.is_rocm:
        major = gpu.compute_capability[0]
        multiples = [table[major]] if major in table else []
    else:
        multiples = list(table.values())
    if not any(dep.block_size % m == 0 for m in multiples):
        need = " or ".join(str(m) for m in sorted(set(multiples))) or "?"
        where = f" on {gpu.name}" if gpu is not None else ""
        raise DeploymentError(
            f"--block-size {dep.block_size}: no sparse-MLA attention backend{where} takes it "
            f"(vLLM: No valid attention backend found; they take multiples of {need} tokens)")
    return dep.block_size


def _block_size(model: ModelArch, dep: VllmDeployment, attention: AttentionLayer,
                rules: VllmRules, gpu: GPU | None, notes: list[str]) -> AttentionLayer:
    """Step 4 before alignment: --block-size, the backend's block, or the default."""
    if model.attn is AttnKind.DSA:
        if dep.block_size is None:
            return attention
        if rules.sparse_user_block_multiples:
            return replace(attention, block_tokens=_sparse_user_block(dep, rules, gpu))
        if dep.block_size != FLASHMLA_SPARSE_BLOCK:
            notes.append(f"--block-size {dep.block_size}: kept at 64 for sparse MLA (rule set "
                         f"{rules.name} does not model the user's block there)")
        return attention
    if dep.block_size is not None:
        return replace(attention, block_tokens=dep.block_size)
    if model.is_hybrid:
        return replace(attention, block_tokens=CUDA_DEFAULT_BLOCK)
    return attention


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
    attention = _block_size(model, dep, attention, rules, gpu, notes)
    mamba = alignment = None
    if model.is_hybrid:
        attention, mamba, alignment = align_hybrid(model, dep, rules, gpu, attention, notes,
                                                   backend)
    indexer, num_indexer, tail = None, 0, False
    sparse = model.attn is AttnKind.DSA
    if sparse:
        indexer, num_indexer, tail = _indexer(model, attention, notes)
    tail_page = 0
    if sparse and model.is_hybrid:
        assert indexer is not None and mamba is not None and model.indexer is not None
        tail_page = KpoolTailLayer(head_dim=model.indexer.head_dim, kpool=model.indexer.kpool,
                                   num_speculative_tokens=dep.num_speculative_tokens
                                   ).page_bytes if tail else 0
        groups = sparse_hybrid_groups(
            latent_page_bytes=attention.page_bytes,
            mla_layers=[layer.index for layer in model.full_layers],
            indexer_page_bytes=indexer.page_bytes, num_indexer=num_indexer,
            state_page_bytes=mamba.page_bytes,
            state_layers=[layer.index for layer in model.linear_layers],
            tail_page_bytes=tail_page,
            states_first=model.layers[0].kind is LayerKind.LINEAR)
    else:
        layers = {"attention": [layer.index for layer in model.full_layers]}
        if model.is_hybrid:
            layers["mamba"] = [layer.index for layer in model.linear_layers]
        groups = kv_cache_groups(layers)
    assert dep.max_model_len is not None and dep.enable_prefix_caching is not None
    stride = 1
    if tail and backend is not None:  # GLM-5.3-Flash's block-outermost layout
        stride = block_stride_alignment_bytes(model, attention, backend)
    return VllmLayout(model=model, deployment=dep, rules=rules, gpu=gpu,
                      max_model_len=dep.max_model_len, prefix_caching=dep.enable_prefix_caching,
                      mamba_cache_mode=dep.mamba_cache_mode, attention=attention,
                      mamba=mamba, alignment=alignment, groups=tuple(groups),
                      notes=tuple(notes), indexer=indexer, num_indexer_layers=num_indexer,
                      kpool_tail=tail, tail_page_bytes=tail_page, mla_backend=backend, block_stride_alignment_bytes=stride)
