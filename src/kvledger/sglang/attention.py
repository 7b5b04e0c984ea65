"""SGLang's default attention backend on a GPU, and the page size that backend forces.

kvledger takes no attention-backend flag, so SGLang always picks one. The pick matters for
memory in one way: some backends only run with certain page sizes and SGLang changes the page
to fit, and T is rounded to whole pages. Followed (sglang 0.5.21 and 0.5.23 wheels, the same
code in both for everything below; python/sglang/srt/arg_groups/):
1. model overrides (model_overrides/*.py, run before the post-process passes):
   - DeepseekV3ForCausalLM (deepseek_v2.py): trtllm_mla on SM100. DSA models get the `dsa`
     backend, whose page is the rule set's DSA page (`kvledger.sglang.resolve`), not this.
   - Qwen3Next and Qwen3.5 (qwen3_5.py `_qwen3_5_hybrid_overrides`), SM100: triton with page
     1 when the radix cache is on, the mamba strategy is not extra_buffer and there is no
     speculation; otherwise the generic pick, and page 64 if that is trtllm_mha, else 1. The
     page is declared, so it replaces a --page-size. The strategy is read before the mamba
     pass (`_mamba_radix_cache_resolution`) resolves `auto`, so an auto strategy counts as not
     extra_buffer (the oracle's recordings confirm it: auto + radix cache → triton, page 1).
   - NemotronH (nemotron_h.py), any Blackwell: with speculation, trtllm_mha (page 64 when
     unset) on SM100 with topk unset or 1, else triton; without, trtllm_mha on SM100.
   - FalconH1 (falcon_h1.py): triton on SM100. GraniteMoeHybrid with mamba layers
     (granitemoehybrid.py): flashinfer on SM100.
   - KimiK3 (kimi_k3.py): with --dcp-size > 1, cutedsl_mla decode (trtllm_mla prefill); else
     trtllm_mla on SM100/SM103.
2. otherwise `get_default_attn_backend` (model_override_base.py):
   MHA: fa3 on Hopper when `is_no_spec_infer_or_topk_one` (topk unset, or 1 with page 1);
   trtllm_mha on SM100 when that holds too and speculation is off or topk was given (0.5.23
   also counts DFLASH, whose topk is forced to 1 later: `_forces_eagle_topk_one`,
   `RuleSet.dflash_counts_as_topk_given`; fa4 for asymmetric K/V rows, which no kvledger
   family has); else flashinfer.
   MLA: fa3 on Hopper, flashinfer on SM100, else triton.
3. `_mla_backend_page_constraints` (overrides.py): trtllm_mha needs a page of 16, 32, 64 or
   128, trtllm_mla and cutedsl_mla 32 or 64; any other page becomes 64.
ROCm (aiter/triton) forces no page and is not modelled further; nor is attention sinks'
triton fallback (no kvledger family has sinks). "SM100" is capability major 10 (B200,
GB200, B300, GB300: `is_sm100_supported`), "Blackwell" majors 10-12.

>>> from kvledger.core.gpus import get_gpu
>>> from kvledger.model.config import load_model
>>> from kvledger.sglang.deploy import Deployment
>>> from kvledger.sglang.rules import RULES
>>> llama, r21 = load_model("llama-3.1-8b"), RULES["sglang-0.5.21"]
>>> pick = default_attention(llama, Deployment(), get_gpu("B200"), r21)
>>> pick.backend.value, pick.page_tokens
('trtllm_mha', 64)
>>> default_attention(llama, Deployment(), get_gpu("H100"), r21).backend.value
'fa3'
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from kvledger.core.gpus import GPU
from kvledger.model.arch import AttnKind, Family, ModelArch
from kvledger.sglang.deploy import Deployment, MambaStrategy, SpecAlgorithm
from kvledger.sglang.rules import RuleSet


class AttnBackend(Enum):
    FA3 = "fa3"
    FLASHINFER = "flashinfer"
    TRITON = "triton"
    TRTLLM_MHA = "trtllm_mha"
    TRTLLM_MLA = "trtllm_mla"
    CUTEDSL_MLA = "cutedsl_mla"

    @property
    def pages(self) -> tuple[int, ...] | None:
        """The page sizes the backend runs with (None: any); `_mla_backend_page_constraints`."""
        return _PAGES.get(self)


_PAGES = {AttnBackend.TRTLLM_MHA: (16, 32, 64, 128), AttnBackend.TRTLLM_MLA: (32, 64),
          AttnBackend.CUTEDSL_MLA: (32, 64)}
FORCED_PAGE_TOKENS = 64  # what `_mla_backend_page_constraints` changes a page it refuses to


@dataclass(frozen=True, slots=True)
class Platform:
    """The `get_platform()` facts the pick reads, from a catalogue GPU (CUDA only)."""

    major: int
    minor: int

    @property
    def hopper(self) -> bool:  # is_hopper_with_cuda_12_3 (CUDA ≥ 12.3 assumed)
        return self.major == 9

    @property
    def sm100(self) -> bool:  # is_sm100_supported
        return self.major == 10

    @property
    def blackwell(self) -> bool:  # is_blackwell_supported
        return self.major in (10, 11, 12)


@dataclass(frozen=True, slots=True, kw_only=True)
class AttentionPick:
    backend: AttnBackend
    page_tokens: int  # the page after the backend's constraints
    source: str  # the SGLang function that picked it

    def note(self, given_page: int | None) -> str | None:
        """A note when the page is not the one given (1 when unset)."""
        if self.page_tokens == (given_page or 1):
            return None
        return (f"page {given_page or 1} → {self.page_tokens}: SGLang's default attention "
                f"backend here is {self.backend.value} ({self.source})")


def _no_spec_or_topk_one(dep: Deployment) -> bool:
    """`is_no_spec_infer_or_topk_one` (utils/common.py) on the flags as given."""
    topk = dep.speculative_eagle_topk
    return topk is None or (topk == 1 and dep.page_size in (None, 1))


def _generic(model: ModelArch, dep: Deployment, on: Platform, rules: RuleSet) -> AttnBackend:
    """`get_default_attn_backend` (2. in the module doc)."""
    if model.attn is AttnKind.GQA:
        if on.hopper and _no_spec_or_topk_one(dep):
            return AttnBackend.FA3
        topk_given = dep.speculative_eagle_topk is not None or (
            rules.dflash_counts_as_topk_given
            and dep.speculative_algorithm is SpecAlgorithm.DFLASH)
        if on.sm100 and _no_spec_or_topk_one(dep) and (
                dep.speculative_algorithm is None or topk_given):
            return AttnBackend.TRTLLM_MHA
        return AttnBackend.FLASHINFER
    if on.hopper:
        return AttnBackend.FA3
    return AttnBackend.FLASHINFER if on.sm100 else AttnBackend.TRITON


def _override(model: ModelArch, dep: Deployment, on: Platform,
              rules: RuleSet) -> tuple[AttnBackend, int | None, str] | None:
    """A model override's (backend, declared page or None, source), or None (1. in the doc)."""
    family = model.family
    if family is Family.DEEPSEEK_V3 and on.sm100:
        return AttnBackend.TRTLLM_MLA, None, "deepseek_v2.py, SM100"
    if family in (Family.QWEN3_NEXT, Family.QWEN3_5) and on.sm100:
        backend = _generic(model, dep, on, rules)
        extra_buffer = (not dep.disable_radix_cache
                        and dep.mamba_strategy is MambaStrategy.EXTRA_BUFFER)
        if backend is AttnBackend.TRTLLM_MHA and (
                extra_buffer or dep.disable_radix_cache or dep.speculative):
            return backend, 64, "qwen3_5.py `_qwen3_5_hybrid_overrides`"
        return AttnBackend.TRITON, 1, ("qwen3_5.py `_qwen3_5_hybrid_overrides`: radix cache "
                                       "on, no extra_buffer, no speculation")
    if family is Family.NEMOTRON_H and on.blackwell:
        if dep.speculative:
            if on.sm100 and dep.speculative_eagle_topk in (None, 1):
                page = 64 if dep.page_size is None else None
                return AttnBackend.TRTLLM_MHA, page, "nemotron_h.py, SM100 speculative"
            return AttnBackend.TRITON, None, "nemotron_h.py, Blackwell speculative"
        if on.sm100:
            return AttnBackend.TRTLLM_MHA, None, "nemotron_h.py, SM100"
        return None
    if family is Family.FALCON_H1 and on.sm100:
        return AttnBackend.TRITON, None, "falcon_h1.py, SM100"
    if family is Family.GRANITE_MOE_HYBRID and on.sm100 and model.is_hybrid:
        return AttnBackend.FLASHINFER, None, "granitemoehybrid.py, SM100"
    if family is Family.KIMI_K3:
        if dep.dcp_size > 1:
            return AttnBackend.CUTEDSL_MLA, None, "kimi_k3.py, DCP decode"
        if on.sm100 and on.minor in (0, 3):
            return AttnBackend.TRTLLM_MLA, None, "kimi_k3.py, SM100/SM103"
    return None


def default_attention(model: ModelArch, dep: Deployment, gpu: GPU | None,
                      rules: RuleSet) -> AttentionPick | None:
    """SGLang's attention backend for `model` on `gpu` and the page it leaves; None for a DSA
    model (its `dsa` backend's page is the rule set's), a ROCm GPU, or no GPU named. `dep` is
    the deployment after its role's changes (a decode server's radix cache is off), with the
    mamba strategy as given."""
    if gpu is None or gpu.arch.is_rocm or model.attn is AttnKind.DSA:
        return None
    on = Platform(*gpu.compute_capability)
    picked = _override(model, dep, on, rules)
    if picked is None:
        backend, page, source = _generic(model, dep, on, rules), None, "get_default_attn_backend"
    else:
        backend, page, source = picked
    page = page or dep.page_size or 1
    if backend.pages is not None and page not in backend.pages:
        page = FORCED_PAGE_TOKENS  # `_mla_backend_page_constraints`
    return AttentionPick(backend=backend, page_tokens=page, source=source)
