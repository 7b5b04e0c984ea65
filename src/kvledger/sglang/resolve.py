"""Resolve a model + deployment + rule set into a CacheLayout of concrete specs.

Every "auto" is decided here, once, with `dataclasses.replace`; everything downstream (ledgers,
capacity, pools) reads the layout and never re-derives a flag.

Decisions, each mirroring SGLang (server_args.py and the model-specific overrides):
1. `kv_cache_dtype auto` on a DSA model: bf16 on Hopper, fp8 on Blackwell and newer. With no
   GPU named we assume fp8, the article's deployment, and say so in `notes`.
2. Mamba strategy `auto`: extra_buffer with the triton linear-attention backend; otherwise
   no_buffer, which quietly turns the overlap scheduler off. An explicit no_buffer with a
   DSA model (paged) or with overlap on is an error.
3. DSA page: the rule set's page (64 or 64·kpool); a requested page of 1 is overridden.
   Other models: the page SGLang's default attention backend leaves on the GPU named
   (`kvledger.sglang.attention`: 64 for trtllm_mha / trtllm_mla on B200), else as given.
4. State slots reserved per request: 1 with the radix cache off; extra_buffer 3 + 2 (overlap)
   or 3 + 1 (no overlap); no_buffer 3.

>>> from kvledger.model.config import load_model
>>> from kvledger.sglang.rules import RULES
>>> lay = resolve(load_model(), Deployment(), RULES["sglang-0.5.21"])
>>> lay.kv_row.row_bytes, lay.page_tokens, lay.slots_per_request, lay.held_slots_per_request
(528, 64, 5, 3)
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kvledger.core.gpus import GPU
from kvledger.model.arch import AttnKind, Family, ModelArch, ModelError, ShardingError
from kvledger.sglang.attention import AttentionPick, default_attention
from kvledger.sglang.dcp import check_dcp, kv_shard_groups
from kvledger.sglang.deploy import (
    Deployment,
    DeploymentError,
    DsaBackend,
    KVDtype,
    MambaStrategy,
    StateDtype,
)
from kvledger.sglang.draftlayers import draft_notes
from kvledger.sglang.mamba_strategy import (
    check_extra_buffer,
    resolve_strategy,
    state_slots,
)
from kvledger.sglang.roles import resolve_role
from kvledger.sglang.rules import RuleSet
from kvledger.sglang.specs import (
    BF16_BYTES,
    FP8_SCALE_GROUP,
    GqaRowSpec,
    IndexKeySpec,
    LatentRowSpec,
    RowLayout,
    StateSpec,
    TailSpec,
)
from kvledger.sglang.stagelayers import resolve_stages

SPECULATIVE_MAX_RUNNING_REQUESTS = 48
CONV_ITEMSIZE = BF16_BYTES  # conv state follows the model dtype (bf16) in SGLang

# Families SGLang has no model class for (python/sglang/srt/models/), and the architecture its
# loader looks up. model_loader/utils.py get_model_architecture then calls
# resolve_transformers_arch, which under the default --model-impl auto refuses a Transformers
# class whose is_backend_compatible() is False (transformers' JambaPreTrainedModel does not set
# _supports_attention_backend); the same check in 0.5.21 and 0.5.23.
NO_SGLANG_MODEL_CLASS: dict[Family, str] = {Family.JAMBA: "JambaForCausalLM"}


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheLayout:
    model: ModelArch
    deployment: Deployment  # autos resolved
    rules: RuleSet
    kv_row: LatentRowSpec | GqaRowSpec
    index_key: IndexKeySpec | None
    state: StateSpec | None
    page_tokens: int
    context_tokens: int
    slots_per_request: int  # planning ratio (SGLang's reservation per running request)
    held_slots_per_request: int  # what a running request physically holds
    notes: tuple[str, ...] = ()

    @property
    def allocation_page_tokens(self) -> int:
        """The paged allocator's page: page · dcp logical slots (`kvledger.sglang.dcp`)."""
        return self.page_tokens * self.deployment.dcp_size

    @property
    def overlap(self) -> bool:
        return not self.deployment.disable_overlap_schedule

    def tail(self, max_running_requests: int) -> TailSpec | None:
        """Compress-tail buffers for a rank running `max_running_requests` requests."""
        if self.index_key is None or self.index_key.kpool <= 1:
            return None
        return TailSpec(
            rows=max_running_requests + 2,  # req_to_token rows (N + 1) + 1
            width_tokens=self.index_key.kpool + self.deployment.speculative_num_draft_tokens,
            head_dim=self.index_key.head_dim,
        )


def _kv_dtype(model: ModelArch, dep: Deployment, blackwell: bool | None, notes: list[str]) -> KVDtype:
    if dep.kv_cache_dtype is not KVDtype.AUTO:
        return dep.kv_cache_dtype
    if model.attn is not AttnKind.DSA:
        return KVDtype.BF16  # auto = the model dtype outside DSA
    if blackwell is None:
        notes.append("kv_cache_dtype auto with no GPU named: assumed fp8 (Blackwell), as the article")
        return KVDtype.FP8_E4M3
    return KVDtype.FP8_E4M3 if blackwell else KVDtype.BF16


def _page_tokens(model: ModelArch, dep: Deployment, rules: RuleSet, notes: list[str],
                 attention: AttentionPick | None = None, *, rocm: bool = False) -> int:
    if model.attn is AttnKind.DSA:
        assert model.indexer is not None
        page = rules.dsa_page_tokens(model.indexer.kpool)
        if rocm and rules.rocm_dsa_page_tokens is not None:
            notes.append(f"ROCm: {rules.name} sets the DSA page to {rules.rocm_dsa_page_tokens} "
                         "(server_args.py, \"Setting page size to 1 for DeepSeek DSA on ROCm\")")
            return rules.rocm_dsa_page_tokens
        if rocm:
            notes.append(f"ROCm: {rules.name} sets the DSA page to 1 when aiter's preshuffle "
                         f"paged-MQA kernel is unavailable, else {page}; kvledger takes {page}")
        # arg_groups/model_overrides/deepseek_v2.py: on CUDA the DSA page replaces whatever
        # --page-size asked for (with a warning), it does not refuse it.
        if dep.page_size not in (None, 1, page):
            notes.append(f"--page-size {dep.page_size}: SGLang replaces it with the DSA page "
                         f"of {page} tokens ({rules.name})")
        return page
    page = dep.page_size or 1
    if attention is not None:
        if note := attention.note(dep.page_size):
            notes.append(note)
        page = attention.page_tokens
    if model.is_hybrid and dep.mamba_strategy is MambaStrategy.EXTRA_BUFFER:
        check_extra_buffer(page, dep.speculative_num_draft_tokens)
    return page


def _check_requests_per_worker(dep: Deployment, rules: RuleSet, notes: list[str]) -> None:
    requests, workers = dep.max_running_requests, dep.attn_dp_size
    if requests is None or requests >= workers:
        return
    if not rules.requests_floor_one_per_worker:
        raise DeploymentError(f"--max-running-requests {requests}: split over {workers} "
                              "attention-DP ranks this leaves 0 per rank; expected at least "
                              f"--dp-size ({rules.name})")
    notes.append(f"--max-running-requests {requests} < {workers} attention-DP ranks: "
                 f"{rules.name} gives each worker max(1, {requests} // {workers}) = 1")


def _dsa_backend(model: ModelArch, dep: Deployment, blackwell: bool | None,
                 rules: RuleSet) -> DsaBackend | None:
    """The DSA backend that sets the fp8 row layout when the flags leave it to SGLang:
    `_dsa_split_backend_resolution` (arg_groups/overrides.py, 0.5.21 and 0.5.23) picks trtllm
    for fp8 on a GPU of capability ≥ 10 (raw rows, no per-128 scales: 576 B for DeepSeek-V3.2
    instead of 656) and flashmla_kv / flashmla_sparse + fa3 on Hopper (scaled rows). With no GPU
    named the article's scaled row stands. Under 0.5.23's DSA DCP path
    (`RuleSet.dsa_dcp_replicates_index_keys`) `_dsa_dcp_overrides` sets trtllm on any GPU.

    >>> from kvledger.model.config import load_model
    >>> from kvledger.sglang.rules import RULES
    >>> dsv32 = load_model("deepseek-v3.2")
    >>> fp8 = Deployment(kv_cache_dtype=KVDtype.FP8_E4M3)
    >>> r21 = RULES["sglang-0.5.21"]
    >>> _dsa_backend(dsv32, fp8, True, r21).value, _dsa_backend(dsv32, fp8, False, r21).value
    ('trtllm', 'flashmla_sparse')
    """
    if dep.dsa_backend is not None or model.attn is not AttnKind.DSA:
        return dep.dsa_backend
    if dep.dcp_size > 1 and rules.dsa_dcp_replicates_index_keys:
        return DsaBackend.TRTLLM  # 0.5.23 `_dsa_dcp_overrides`, on every GPU
    if blackwell and dep.kv_cache_dtype is KVDtype.FP8_E4M3 and rules.dsa_fp8_trtllm_on_sm100:
        return DsaBackend.TRTLLM
    return DsaBackend.FLASHMLA_SPARSE


def _check_scale_groups(model: ModelArch, field: str, width: int) -> None:
    # Scaled fp8 stores one 4-byte scale per 128 elements; calculate_mla_kv_cache_dim asserts
    # kv_lora_rank % quant_block_size == 0, and index keys are always scaled fp8.
    if width % FP8_SCALE_GROUP:
        raise ModelError(f"{model.source}: {field} is {width} (expected a multiple of "
                         f"{FP8_SCALE_GROUP} for scaled fp8 rows)")


def resolve(
    model: ModelArch, dep: Deployment, rules: RuleSet, *, blackwell: bool | None = None,
    gpu: GPU | None = None, rocm: bool | None = None,
) -> CacheLayout:
    """Resolve every auto; raise DeploymentError or ShardingError naming the flag. `gpu`
    decides the attention backend's page (decision 3) and, unless `blackwell` is given, the
    DSA defaults (decision 1); `rocm` (else the GPU's vendor) the DSA page on ROCm."""
    if blackwell is None and gpu is not None:
        blackwell = gpu.dsa_auto_kv_fp8
    if arch := NO_SGLANG_MODEL_CLASS.get(model.family):
        raise DeploymentError(
            f"{model.name}: SGLang ({rules.name}) has no native {arch} and refuses the "
            f"Transformers fallback: \"{arch} has no SGlang implementation and the Transformers "
            "implementation is not compatible with SGLang.\" (model_loader/utils.py, "
            "resolve_transformers_arch); use --engine vllm, which serves it natively")
    dep, notes = resolve_role(dep, rules)
    dep, stage_notes = resolve_stages(dep)
    notes += stage_notes + check_dcp(model, dep, rules) + draft_notes(model, dep)
    attn_tp = dep.attn_tp_size
    dep = replace(dep, kv_cache_dtype=_kv_dtype(model, dep, blackwell, notes))
    dep = replace(dep, dsa_backend=_dsa_backend(model, dep, blackwell, rules))
    attention = default_attention(model, dep, gpu, rules)  # reads the strategy as given
    dep = resolve_strategy(model, dep, rules, notes)
    page = _page_tokens(model, dep, rules, notes, attention,
                        rocm=gpu.arch.is_rocm if rocm is None and gpu is not None else bool(rocm))
    dep = replace(dep, page_size=page)
    _check_requests_per_worker(dep, rules, notes)
    if dep.speculative and dep.max_running_requests is None:
        # Every speculative handler in server_args (arg_groups/speculative_hook.py) sets 48;
        # _handle_max_mamba_cache asserts a limit is set when speculating.
        notes.append(f"speculative decoding: --max-running-requests unset, SGLang sets "
                     f"{SPECULATIVE_MAX_RUNNING_REQUESTS}")
        dep = replace(dep, max_running_requests=SPECULATIVE_MAX_RUNNING_REQUESTS)
    context = dep.context_length or model.max_context_tokens
    if dep.context_length and model.max_context_tokens and dep.context_length > model.max_context_tokens:
        raise DeploymentError(
            f"--context-length {dep.context_length}: exceeds the model's "
            f"max_position_embeddings {model.max_context_tokens}"
        )
    itemsize = dep.kv_cache_dtype.itemsize
    if model.attn is AttnKind.GQA:
        assert model.gqa is not None
        try:
            heads = model.gqa.kv_heads_per_rank(kv_shard_groups(dep))  # attn_tp // dcp
        except ShardingError as exc:
            raise DeploymentError(f"--tp-size {dep.tp_size}: {exc}") from None
        kv_row: LatentRowSpec | GqaRowSpec = GqaRowSpec(
            kv_heads_per_rank=heads, head_dim=model.gqa.head_dim, itemsize=itemsize
        )
    else:
        assert model.mla is not None
        if itemsize == 2:
            layout = RowLayout.BF16
        elif model.attn is AttnKind.DSA and (dep.dsa_backend is None
                                             or dep.dsa_backend.scaled_fp8
                                             or not rules.dsa_trtllm_row_raw):
            layout = RowLayout.FP8_SCALED
        else:
            layout = RowLayout.FP8_RAW
        if layout is RowLayout.FP8_SCALED:
            _check_scale_groups(model, "kv_lora_rank", model.mla.kv_lora_rank)
        kv_row = LatentRowSpec(
            kv_lora_rank=model.mla.kv_lora_rank,
            qk_rope_head_dim=model.mla.qk_rope_head_dim,
            layout=layout,
        )
    index_key = None
    if model.indexer is not None:
        _check_scale_groups(model, "index_head_dim", model.indexer.head_dim)
        probe = IndexKeySpec(head_dim=model.indexer.head_dim, kpool=model.indexer.kpool,
                             reserved_bytes=0, page_tokens=page)
        index_key = replace(
            probe, reserved_bytes=rules.indexer_reserved_bytes(probe.row_bytes, probe.kpool)
        )
    state = None
    if model.state is not None and model.is_hybrid:
        ssm = dep.mamba_ssm_dtype or StateDtype(model.state.ssm_dtype_default or "float32")
        dep = replace(dep, mamba_ssm_dtype=ssm)
        try:
            state = StateSpec(
                conv_shape=model.state.conv_shape(attn_tp),
                conv_itemsize=CONV_ITEMSIZE,
                temporal_shape=model.state.temporal_shape(attn_tp),
                temporal_itemsize=ssm.itemsize,
            )
        except ShardingError as exc:
            raise DeploymentError(f"--tp-size {dep.tp_size} (attn_tp {attn_tp}): {exc}") from None
    slots, held = state_slots(model, dep, rules)
    return CacheLayout(
        model=model, deployment=dep, rules=rules, kv_row=kv_row, index_key=index_key,
        state=state, page_tokens=page, context_tokens=context, slots_per_request=slots,
        held_slots_per_request=held, notes=tuple(notes),
    )
