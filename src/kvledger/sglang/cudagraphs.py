"""SGLang's CUDA-graph backend per phase, and what its automatic mem_fraction_static reserves
for capturing them (`kvledger.sglang.memfraction`).

Read in the 0.5.21 and 0.5.23 wheels (files under sglang/srt/):
1. Defaults (model_executor/cuda_graph_config.py `CudaGraphConfig`): decode `full`; prefill
   `default_prefill_backend()`, which is `breakable` on CUDA (torch's `is_cuda()`). Off CUDA it
   is tc_piecewise in 0.5.21, which `disable_tc_piecewise_cudagraph_if_incompatible` turns off
   on HIP ("non-CUDA hardware"), and disabled in 0.5.23: off on ROCm either way.
2. Flags (arg_groups/cuda_graph_hook.py `parse_cuda_graph_config`, lowest precedence first):
   --disable-cuda-graph (both phases), --disable-prefill-cuda-graph / --disable-decode-cuda-graph,
   --cuda-graph-backend-prefill / --cuda-graph-backend-decode. A phase a flag set is locked:
   nothing below changes it. 0.5.23 refuses tc_piecewise (cuda_graph_config.py
   `parse_cuda_graph_backend_arg`). 0.5.21 `apply_glm5_chunked_prefill_default`: a given
   breakable prefill on GLM-5.3-Flash (`Glm5NextForConditionalGeneration`) makes the chunked
   prefill 4,096 tokens before the fraction is chosen; 0.5.23 has no such default.
3. An unlocked breakable prefill is turned off (`apply_cuda_graph_compatibility`, then
   `disable_breakable_cudagraph_if_incompatible`) under --pp-size > 1, for KDA models
   (configs/model_config.py `uses_kda_attention`; 0.5.23 keeps GLM-5.3-Flash's), with
   --attn-cp-size > 1 (`supports_prefill_cp_bcg` needs --enable-prefill-cp, which kvledger does
   not read), with --dcp-size > 1, and for a multimodal model whose architecture is not in
   model_config.py `multimodal_breakable_cuda_graph_supported_model_archs` (GLM-5.3-Flash's,
   Qwen3.5's and Kimi-K3's are). `apply_cuda_graph_disaggregation_roles` turns off an unlocked
   prefill on a decode server and an unlocked decode on a prefill server.
4. The reserve (arg_groups/memory_hook.py `reserve_for_graph_mb`, MiB, before the 10 GiB
   floor): decode graphs max_bs · 2 unless on a prefill server or disabled; DP-attention padding
   (`kvledger.sglang.memfraction`) whatever the backend; prefill graphs unless on a decode server
   or disabled: 1,536 for an MLA model (`use_mla_backend`: MLA and DSA), else 8 per captured
   size of `generate_prefill_cuda_graph_batch_sizes(max_bs)` (58 sizes up to 8,192 tokens, 74
   up to 16,384), where `handle_gpu_memory_settings` sets max_bs to the chunked prefill size,
   capped at 8,192 under --pp-size > 1 with breakable, at --max-total-tokens, and at 4,096 for
   a model path containing "llama-2".

Not modelled (kvledger reads none of their flags, or has no such family): 0.5.21's detour of
an unlocked breakable prefill to tc_piecewise for multimodal architectures validated for it
but not for breakable (MiniMax-M3), DeepSeek-V4's rule, two-batch overlap, --moe-a2a-backend
(deepep: 1 GiB more with breakable, `reserve_for_deepep_a2a_mb`), --enable-prefill-cp, the
capture-size and chunked-prefill flags. `disable_prefill_cuda_graph_for_deepseek_trtllm_mla`
turns DeepSeek-V3's prefill graphs off on SM100 only after the fraction is chosen, so its
reserve stays.

>>> from kvledger.model.config import load_model
>>> graphs = cuda_graphs(GRAPHS_0521, load_model("llama-3.1-8b"), Deployment())
>>> graphs.prefill.value, len(graphs.prefill_capture_sizes(8192)), graphs.prefill_reserve_mib(8192)
('breakable', 58, 464)
>>> cuda_graphs(GRAPHS_0521, load_model("llama-3.1-8b"), Deployment(pp_size=2)).prefill_why
'--pp-size > 1'
"""

from __future__ import annotations

from dataclasses import dataclass

from kvledger.core.errors import DeploymentError
from kvledger.model.arch import AttnKind, Family, LinearKind, ModelArch
from kvledger.sglang.choices import DisaggMode, GraphBackend
from kvledger.sglang.deploy import Deployment

_MLA_PREFILL_MIB = 1536  # "MLA backend overhead is much higher than expected with fa3"
_MIB_PER_PREFILL_SIZE = 8  # "only non-torch memory is counted"
_PP_PREFILL_MAX_BS = 8192  # memory_hook.py `_DEFAULT_PP_PREFILL_CUDA_GRAPH_MAX_TOKENS`
_LLAMA2_PREFILL_MAX_BS = 4096


@dataclass(frozen=True, slots=True, kw_only=True)
class GraphRules:
    """One release's CUDA-graph backend rules (module doc, 1-3)."""

    backends: frozenset[GraphBackend]  # what --cuda-graph-backend-{prefill,decode} accept
    kda_keep_breakable: frozenset[Family]  # KDA families an unlocked breakable prefill keeps
    multimodal_breakable: frozenset[Family]  # multimodal families validated for breakable
    # chunked_prefill_size a given breakable prefill sets for these families
    given_breakable_chunk: tuple[tuple[Family, int], ...] = ()


_MULTIMODAL_BREAKABLE = frozenset({Family.GLM5_NEXT, Family.QWEN3_5, Family.KIMI_K3})
GRAPHS_0521 = GraphRules(backends=frozenset(GraphBackend), kda_keep_breakable=frozenset(),
                         multimodal_breakable=_MULTIMODAL_BREAKABLE,
                         given_breakable_chunk=((Family.GLM5_NEXT, 4096),))
GRAPHS_0523 = GraphRules(backends=frozenset(GraphBackend) - {GraphBackend.TC_PIECEWISE},
                         kda_keep_breakable=frozenset({Family.GLM5_NEXT}),
                         multimodal_breakable=_MULTIMODAL_BREAKABLE)


def prefill_capture_sizes(max_bs: int) -> tuple[int, ...]:
    """cuda_graph_hook.py `generate_prefill_cuda_graph_batch_sizes`: the prefill token counts
    captured, up to max_bs."""
    sizes = (*range(4, 33, 4), *range(48, 257, 16), *range(288, 513, 32),
             *range(576, 1025, 64), *range(1280, 4097, 256), *range(4608, max_bs + 1, 512))
    return tuple(s for s in sizes if s <= max_bs)


@dataclass(frozen=True, slots=True, kw_only=True)
class CudaGraphs:
    """The backends SGLang resolves for a deployment and what their reserve needs."""

    prefill: GraphBackend = GraphBackend.BREAKABLE
    decode: GraphBackend = GraphBackend.FULL
    prefill_why: str = "the CUDA default"
    mla: bool = False  # an MLA attention backend: a flat prefill reserve
    prefill_max_bs_cap: int | None = None  # the caps on the chunked prefill size (module doc, 4)
    chunked_prefill_size: int | None = None  # a default the backend choice sets; None: the GPU's

    def prefill_capture_sizes(self, chunked: int) -> tuple[int, ...]:
        cap = chunked if self.prefill_max_bs_cap is None else min(chunked, self.prefill_max_bs_cap)
        return prefill_capture_sizes(cap)

    def prefill_reserve_mib(self, chunked: int, role: DisaggMode = DisaggMode.NULL) -> float:
        if role.is_decode or self.prefill is GraphBackend.DISABLED:
            return 0
        if self.mla:
            return _MLA_PREFILL_MIB
        return len(self.prefill_capture_sizes(chunked)) * _MIB_PER_PREFILL_SIZE

    def decode_reserve_mib(self, max_bs: int, role: DisaggMode = DisaggMode.NULL) -> float:
        if role.is_prefill or self.decode is GraphBackend.DISABLED:
            return 0
        return max_bs * 2


# A text model's backends on CUDA with no flags: breakable prefill, full decode.
CUDA_DEFAULT = CudaGraphs()


def _given(rules: GraphRules, flag: str, backend: GraphBackend | None) -> GraphBackend | None:
    if backend is not None and backend not in rules.backends:
        raise DeploymentError(f"{flag} {backend.value}: this release removed it (\"tc_piecewise "
                              "was removed; select breakable, full, or disabled\")")
    return backend


def _breakable_off(rules: GraphRules, arch: ModelArch, dep: Deployment) -> str | None:
    """Why an unlocked breakable prefill is turned off (module doc, 3), or None."""
    if dep.pp_size > 1:
        return "--pp-size > 1"
    kda = arch.state is not None and arch.state.kind is LinearKind.KDA
    if kda and arch.family not in rules.kda_keep_breakable:
        return "a KDA model"
    if dep.attn_cp_size > 1:
        return "--attn-cp-size > 1"
    if dep.dcp_size > 1:
        return "--dcp-size > 1"
    if arch.is_multimodal and arch.family not in rules.multimodal_breakable:
        return "a multimodal model not validated for breakable"
    if dep.disaggregation_mode.is_decode:
        return "a decode server"
    return None


def cuda_graphs(rules: GraphRules, arch: ModelArch, dep: Deployment, *,
                rocm: bool = False) -> CudaGraphs:
    """The prefill and decode backends SGLang resolves (module doc, 1-3); `rocm`: a HIP GPU."""
    prefill_given = _given(rules, "--cuda-graph-backend-prefill", dep.cuda_graph_backend_prefill)
    decode_given = _given(rules, "--cuda-graph-backend-decode", dep.cuda_graph_backend_decode)
    off = GraphBackend.DISABLED
    if prefill_given is not None:
        prefill, why = prefill_given, "--cuda-graph-backend-prefill"
    elif dep.disable_prefill_cuda_graph or dep.disable_cuda_graph:
        prefill = off
        why = "--disable-prefill-cuda-graph" if dep.disable_prefill_cuda_graph else "--disable-cuda-graph"
    elif rocm:
        prefill, why = off, "not CUDA"
    else:
        reason = _breakable_off(rules, arch, dep)
        prefill, why = (off, reason) if reason else (GraphBackend.BREAKABLE, "the CUDA default")
    if decode_given is not None:
        decode = decode_given
    elif dep.disable_decode_cuda_graph or dep.disable_cuda_graph or dep.disaggregation_mode.is_prefill:
        decode = off
    else:
        decode = GraphBackend.FULL
    caps = [dep.max_total_tokens] if dep.max_total_tokens is not None else []
    if dep.pp_size > 1 and prefill is GraphBackend.BREAKABLE:
        caps.append(_PP_PREFILL_MAX_BS)
    if "llama-2" in arch.name.lower():
        caps.append(_LLAMA2_PREFILL_MAX_BS)
    chunk = None
    if prefill_given is GraphBackend.BREAKABLE and not rocm:
        chunk = dict(rules.given_breakable_chunk).get(arch.family)
    return CudaGraphs(prefill=prefill, decode=decode, prefill_why=why,
                      mla=arch.attn in (AttnKind.MLA, AttnKind.DSA),
                      prefill_max_bs_cap=min(caps) if caps else None, chunked_prefill_size=chunk)
