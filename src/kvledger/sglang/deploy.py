"""Deployment: the SGLang server flags that change memory, frozen and validated.

Field names follow SGLang's `ServerArgs` (python/sglang/srt/server_args.py). "Auto" values
(KV dtype, mamba strategy, page size) are resolved once, against a model, a rule set and a
GPU, by `kvledger.sglang.resolve`; this module only holds and checks what the user said.

Construction validates every field and every cross-field rule SGLang enforces from flags alone
(no model, no GPU); a violation raises DeploymentError naming the flag, e.g. "--tp-size 6: …".
Each field carries its flag in `metadata["flag"]`: the spelling every SGLang release accepts
(newer releases add aliases; `kvledger.sglang.launch.flags` lists them all).

>>> d = Deployment(tp_size=8, dp_size=8, enable_dp_attention=True)
>>> d.attn_dp_size, d.attn_tp_size
(8, 1)
>>> Deployment(tp_size=8, dp_size=4, enable_dp_attention=True).attn_tp_size
2
>>> Deployment(tp_size=8, dp_size=3, enable_dp_attention=True)
Traceback (most recent call last):
...
kvledger.core.errors.DeploymentError: --dp-size 3: with --enable-dp-attention, --tp-size 8 must be a multiple of it (attn_tp = tp / dp / attn_cp)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from enum import Enum

from kvledger.core.errors import DeploymentError
from kvledger.core.limits import MAX_COUNT, MAX_GIB, MAX_HICACHE_RATIO, show_value
from kvledger.model.quant import QuantMethod
from kvledger.sglang.choices import (  # re-exported: the enums belong with the Deployment
    DisaggMode as DisaggMode,
)
from kvledger.sglang.choices import (
    DraftModel as DraftModel,
)
from kvledger.sglang.choices import (
    DsaBackend as DsaBackend,
)
from kvledger.sglang.choices import (
    GraphBackend as GraphBackend,
)
from kvledger.sglang.choices import (
    KVDtype as KVDtype,
)
from kvledger.sglang.choices import (
    LinearBackend as LinearBackend,
)
from kvledger.sglang.choices import (
    MambaStrategy as MambaStrategy,
)
from kvledger.sglang.choices import (
    SpecAlgorithm as SpecAlgorithm,
)
from kvledger.sglang.choices import (
    StateDtype as StateDtype,
)


def _flag(default: object, flag: str):
    return field(default=default, metadata={"flag": flag})


@dataclass(frozen=True, slots=True, kw_only=True)
class Deployment:
    tp_size: int = _flag(1, "--tp-size")
    dp_size: int = _flag(1, "--dp-size")
    enable_dp_attention: bool = _flag(False, "--enable-dp-attention")
    attn_cp_size: int = _flag(1, "--attn-cp-size")
    ep_size: int = _flag(1, "--ep-size")  # expert parallelism inside the tp group
    pp_size: int = _flag(1, "--pp-size")  # pipeline stages, each a tp group (kvledger.sglang.stages)
    dcp_size: int = _flag(1, "--dcp-size")  # decode context parallelism (kvledger.sglang.dcp)
    # the server's role in a prefill/decode split (kvledger.sglang.roles)
    disaggregation_mode: DisaggMode = _flag(DisaggMode.NULL, "--disaggregation-mode")
    # extra req_to_token rows for requests in transfer; None: SGLang's default (roles.py)
    disaggregation_decode_extra_slots: int | None = _flag(
        None, "--disaggregation-decode-extra-slots")
    # keep the radix cache on a decode server (SGLang forces it off otherwise)
    disaggregation_decode_enable_radix_cache: bool = _flag(
        False, "--disaggregation-decode-enable-radix-cache")
    # None: the checkpoint's quantization_config (or bf16)
    quantization: QuantMethod | None = _flag(None, "--quantization")
    kv_cache_dtype: KVDtype = _flag(KVDtype.AUTO, "--kv-cache-dtype")
    # None: SGLang's choice for the GPU and KV dtype (kvledger.sglang.resolve._dsa_backend)
    dsa_backend: DsaBackend | None = _flag(
        None, "--nsa-prefill-backend/--nsa-decode-backend")
    mamba_ssm_dtype: StateDtype | None = _flag(None, "--mamba-ssm-dtype")  # None: config's, else fp32
    mamba_strategy: MambaStrategy = _flag(MambaStrategy.AUTO, "--mamba-scheduler-strategy")
    disable_overlap_schedule: bool = _flag(False, "--disable-overlap-schedule")
    linear_attn_backend: LinearBackend = _flag(LinearBackend.TRITON, "--linear-attn-backend")
    disable_radix_cache: bool = _flag(False, "--disable-radix-cache")
    page_size: int | None = _flag(None, "--page-size")  # None: the rule set's page for the model
    # None: 1.0 with --available-gib, else SGLang's
    mem_fraction_static: float | None = _flag(None, "--mem-fraction-static")
    # state : token bytes, a ratio (not a fraction)
    mamba_full_memory_ratio: float = _flag(0.9, "--mamba-full-memory-ratio")
    # global state slots, split over attn_dp
    max_mamba_cache_size: int | None = _flag(None, "--max-mamba-cache-size")
    max_total_tokens: int | None = _flag(None, "--max-total-tokens")
    max_running_requests: int | None = _flag(None, "--max-running-requests")  # global, over attn_dp
    context_length: int | None = _flag(None, "--context-length")  # None: max_position_embeddings
    # MTP/draft tokens per step; 0 = speculative decoding off
    speculative_num_draft_tokens: int = _flag(0, "--speculative-num-draft-tokens")
    # None with draft tokens > 0: an algorithm the caller did not name
    speculative_algorithm: SpecAlgorithm | None = _flag(None, "--speculative-algorithm")
    # EAGLE branches per step as given; None: unset, which SGLang's default attention backend
    # reads before the speculative hook picks topk 1 (kvledger.sglang.attention)
    speculative_eagle_topk: int | None = _flag(None, "--speculative-eagle-topk")
    # EAGLE-family draft steps as given; None: unset (SGLang picks them, or steps + 1 = draft
    # tokens with topk 1); required with topk > 1, which SGLang's handler cannot derive
    speculative_num_steps: int | None = _flag(None, "--speculative-num-steps")
    # the draft checkpoint: unset, the model's own path, or another (kvledger.sglang.draftlayers)
    speculative_draft_model: DraftModel = _flag(DraftModel.UNSET, "--speculative-draft-model-path")
    enable_hierarchical_cache: bool = _flag(False, "--enable-hierarchical-cache")
    hicache_ratio: float | None = _flag(None, "--hicache-ratio")  # host = ratio × device, per pool
    hicache_size_gb: float | None = _flag(None, "--hicache-size")  # host GB (1e9 B); beats ratio
    # CUDA graphs, per phase (kvledger.sglang.cudagraphs): their capture is reserved out of the
    # automatic mem_fraction_static; None: SGLang's default backend
    disable_cuda_graph: bool = _flag(False, "--disable-cuda-graph")
    disable_prefill_cuda_graph: bool = _flag(False, "--disable-prefill-cuda-graph")
    disable_decode_cuda_graph: bool = _flag(False, "--disable-decode-cuda-graph")
    cuda_graph_backend_prefill: GraphBackend | None = _flag(None, "--cuda-graph-backend-prefill")
    cuda_graph_backend_decode: GraphBackend | None = _flag(None, "--cuda-graph-backend-decode")

    def __post_init__(self) -> None:
        _check_types(self)
        _check_maxima(self)
        _check_parallelism(self)
        _check_cache(self)

    @property
    def attn_dp_size(self) -> int:
        return self.dp_size if self.enable_dp_attention else 1

    @property
    def attn_tp_size(self) -> int:
        return self.tp_size // self.attn_dp_size // self.attn_cp_size

    @property
    def speculative(self) -> bool:
        return self.speculative_num_draft_tokens > 0


FIELD_FLAGS: dict[str, str] = {f.name: f.metadata["flag"] for f in fields(Deployment)}
"""Deployment field → the flag named in its errors."""

_ENUM_FIELDS = {"kv_cache_dtype": KVDtype, "disaggregation_mode": DisaggMode,
                "speculative_draft_model": DraftModel,
                "mamba_strategy": MambaStrategy, "linear_attn_backend": LinearBackend}
_OPTIONAL_ENUM_FIELDS = {"mamba_ssm_dtype": StateDtype, "speculative_algorithm": SpecAlgorithm,
                         "dsa_backend": DsaBackend, "cuda_graph_backend_prefill": GraphBackend,
                         "cuda_graph_backend_decode": GraphBackend,
                         "quantization": QuantMethod}
_BOOL_FIELDS = ("enable_dp_attention", "disable_overlap_schedule", "disable_radix_cache",
                "enable_hierarchical_cache", "disaggregation_decode_enable_radix_cache",
                "disable_cuda_graph", "disable_prefill_cuda_graph", "disable_decode_cuda_graph")
_POSITIVE_INT_FIELDS = ("tp_size", "dp_size", "attn_cp_size", "ep_size", "pp_size", "dcp_size")
_OPTIONAL_POSITIVE_INT_FIELDS = ("page_size", "speculative_eagle_topk", "speculative_num_steps",
                                 "max_mamba_cache_size",
                                 "max_total_tokens", "max_running_requests", "context_length")


def _show(value: object) -> str:
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, int) and not isinstance(value, bool):
        return show_value(value)
    return repr(value) if isinstance(value, str) else str(value)


def _fail(name: str, value: object, expected: str) -> DeploymentError:
    return DeploymentError(f"{FIELD_FLAGS[name]} {_show(value)}: {expected}")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_real(value: object) -> bool:
    return _is_int(value) or (isinstance(value, float) and math.isfinite(value))


def _check_types(d: Deployment) -> None:
    for name, enum in (_ENUM_FIELDS | _OPTIONAL_ENUM_FIELDS).items():
        value = getattr(d, name)
        if not isinstance(value, enum) and not (value is None and name in _OPTIONAL_ENUM_FIELDS):
            choices = ", ".join(m.value for m in enum)
            raise _fail(name, value, f"expected a {enum.__name__} member, one of {choices}")
    for name in _BOOL_FIELDS:
        if not isinstance(getattr(d, name), bool):
            raise _fail(name, getattr(d, name), "expected True or False (a switch)")
    for name in _POSITIVE_INT_FIELDS:
        if not (_is_int(getattr(d, name)) and getattr(d, name) >= 1):
            raise _fail(name, getattr(d, name), "expected a positive integer")
    for name in _OPTIONAL_POSITIVE_INT_FIELDS:
        value = getattr(d, name)
        if value is not None and not (_is_int(value) and value >= 1):
            raise _fail(name, value, "expected a positive integer")
    extra = d.disaggregation_decode_extra_slots
    if extra is not None and not (_is_int(extra) and extra >= 0):
        raise _fail("disaggregation_decode_extra_slots", extra, "expected a non-negative integer")
    if not (_is_int(d.speculative_num_draft_tokens) and d.speculative_num_draft_tokens >= 0):
        raise _fail("speculative_num_draft_tokens", d.speculative_num_draft_tokens,
                    "expected a non-negative integer (0 = speculative decoding off)")
    if d.mem_fraction_static is not None and not (
        _is_real(d.mem_fraction_static) and 0 < d.mem_fraction_static <= 1
    ):
        raise _fail("mem_fraction_static", d.mem_fraction_static, "expected a number in (0, 1]")
    if not (_is_real(d.mamba_full_memory_ratio) and d.mamba_full_memory_ratio > 0):
        raise _fail("mamba_full_memory_ratio", d.mamba_full_memory_ratio,
                    "expected a positive number (state : token bytes)")


# Upper limits against absurd values (kvledger.core.limits): beyond them a number would overflow a
# float downstream or describe no machine; SGLang itself has no limit to follow here.
_MAXIMA = {**dict.fromkeys(_POSITIVE_INT_FIELDS + _OPTIONAL_POSITIVE_INT_FIELDS
                           + ("speculative_num_draft_tokens",
                              "disaggregation_decode_extra_slots"), MAX_COUNT),
           "mamba_full_memory_ratio": 1e6, "hicache_ratio": MAX_HICACHE_RATIO,
           "hicache_size_gb": MAX_GIB}


def _check_maxima(d: Deployment) -> None:
    for name, high in _MAXIMA.items():
        value = getattr(d, name)
        if value is not None and value > high:
            raise _fail(name, value, f"expected at most {high:,g}" if isinstance(high, float)
                        else f"expected at most {high:,}")


def _check_parallelism(d: Deployment) -> None:
    tp, dp, cp = d.tp_size, d.dp_size, d.attn_cp_size
    # parallel_hook.handle_data_parallelism: `assert tp_size % dp_size == 0` under DP attention
    if d.enable_dp_attention and tp % dp:
        raise _fail("dp_size", dp, f"with --enable-dp-attention, --tp-size {tp} must be a "
                    "multiple of it (attn_tp = tp / dp / attn_cp)")
    # parallel_hook.handle_context_parallelism: tp % attn_cp == 0 and tp % (dp·attn_cp) == 0
    if cp > 1 and tp % (dp * cp):
        raise _fail("attn_cp_size", cp, f"--tp-size {tp} must be a multiple of --dp-size × "
                    f"--attn-cp-size = {dp * cp}")
    if tp % d.dcp_size:  # parallel_state.initialize_model_parallel
        raise _fail("dcp_size", d.dcp_size, f"SGLang needs it to divide --tp-size {tp} "
                    "(\"tensor_model_parallel_size must be divisible by "
                    "decode_context_parallel_size\")")
    if cp > 1 and d.pp_size > 1:  # the same hook: "PP is not supported with context parallelism"
        raise _fail("pp_size", d.pp_size, "SGLang refuses it with --attn-cp-size > 1 (\"PP is "
                    "not supported with context parallelism\")")
    # MoE layers run ep_size expert groups of tp / ep_size ranks (moe_tp_size = tp // ep)
    if tp % d.ep_size:
        raise _fail("ep_size", d.ep_size, f"--tp-size {tp} must be a multiple of it "
                    "(moe_tp_size = tp / ep)")
    # Both limits are global and split evenly over the attention-DP ranks (SPEC §5). A request
    # limit below the DP size is a rule-set question (kvledger.sglang.resolve).
    value = d.max_mamba_cache_size
    if value is not None and value < d.attn_dp_size:
        raise _fail("max_mamba_cache_size", value, f"split over {d.attn_dp_size} attention-DP "
                    "ranks this leaves 0 per rank; expected at least --dp-size")
    if d.speculative_eagle_topk is not None and d.speculative_algorithm is None:
        raise _fail("speculative_eagle_topk", d.speculative_eagle_topk,
                    "has no effect without --speculative-algorithm")
    if d.speculative_algorithm is not None and d.speculative_num_draft_tokens == 0:
        raise _fail("speculative_algorithm", d.speculative_algorithm,
                    "needs --speculative-num-draft-tokens ≥ 1")
    _check_steps(d)


# The algorithms whose handler (arg_groups/speculative_hook.py `_handle_eagle`) reads the steps.
EAGLE_FAMILY = frozenset({SpecAlgorithm.EAGLE, SpecAlgorithm.EAGLE3, SpecAlgorithm.STANDALONE})


def _check_steps(d: Deployment) -> None:
    """--speculative-num-steps as SGLang's EAGLE handler takes it: with topk 1 the draft
    tokens are steps + 1; with topk > 1 the steps cannot be derived and must be given."""
    steps, topk = d.speculative_num_steps, d.speculative_eagle_topk
    eagle = d.speculative_algorithm in EAGLE_FAMILY
    if steps is not None and not eagle:
        raise _fail("speculative_num_steps", steps, "is read with an EAGLE-family "
                    "--speculative-algorithm only (EAGLE, NEXTN, EAGLE3, STANDALONE)")
    if steps is not None and topk is None:
        raise _fail("speculative_num_steps", steps, "needs --speculative-eagle-topk too")
    if eagle and topk == 1 and steps is not None and d.speculative_num_draft_tokens != steps + 1:
        raise _fail("speculative_num_draft_tokens", d.speculative_num_draft_tokens,
                    f"with topk 1 SGLang runs steps + 1 = {steps + 1} draft tokens")
    if eagle and topk is not None and topk > 1 and steps is None:
        raise _fail("speculative_eagle_topk", topk, "with topk > 1 SGLang needs "
                    "--speculative-num-steps too")


def _check_cache(d: Deployment) -> None:
    # Both decode-only flags act in handle_pd_disaggregation's decode branch and nowhere else.
    for name in ("disaggregation_decode_extra_slots", "disaggregation_decode_enable_radix_cache"):
        value = getattr(d, name)
        if value not in (None, False) and not d.disaggregation_mode.is_decode:
            raise _fail(name, value, "has no effect without --disaggregation-mode decode")
    for name in ("hicache_ratio", "hicache_size_gb"):
        value = getattr(d, name)
        if value is not None and not d.enable_hierarchical_cache:
            raise _fail(name, value, "has no effect without --enable-hierarchical-cache")
    # HostKVCache rounds the host pool up to whole pages and asserts it is larger than the
    # device pool (mem_cache/memory_pool_host.py): with a page-aligned device pool that holds
    # exactly when ratio ≥ 1.
    if d.hicache_ratio is not None and not (_is_real(d.hicache_ratio) and d.hicache_ratio >= 1):
        raise _fail("hicache_ratio", d.hicache_ratio,
                    "expected a number ≥ 1 (SGLang needs the host pool larger than the device pool)")
    if d.hicache_size_gb is not None and not (_is_real(d.hicache_size_gb) and d.hicache_size_gb > 0):
        raise _fail("hicache_size_gb", d.hicache_size_gb, "expected a positive number of GB")
    # kv_cache_hook.handle_cache_compatibility: the two are mutually exclusive
    if d.enable_hierarchical_cache and d.disable_radix_cache:
        raise _fail("enable_hierarchical_cache", True,
                    "cannot be combined with --disable-radix-cache (HiCache extends the radix cache)")
    # mamba_hook.validate_mamba_no_buffer; only the auto strategy turns overlap off by itself
    if d.mamba_strategy is MambaStrategy.NO_BUFFER:
        if not d.disable_overlap_schedule:
            raise _fail("mamba_strategy", d.mamba_strategy,
                        "needs --disable-overlap-schedule (SGLang rejects no_buffer with overlap)")
        if d.page_size not in (None, 1):
            raise _fail("mamba_strategy", d.mamba_strategy,
                        f"needs page size 1, not --page-size {d.page_size}")
