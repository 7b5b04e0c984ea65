"""SGLang's automatic `--mem-fraction-static`, and the memory free before weights load.

Followed: arg_groups' `handle_gpu_memory_settings` (the server-argument resolution for the
GPU memory budget) and `reserve_for_graph_mb`, `adjust_mem_fraction_for_vlm`; the same
arithmetic as `ServerArgs._handle_gpu_memory_settings` in the older single-file server_args.py.
The two rule sets share this table; they differ in the max-bs cap (5) and in which prefill
CUDA-graph backend a deployment gets (`kvledger.sglang.cudagraphs`). `gpu_mem` is the device
total in MiB as nvidia-smi reports it (`get_device_memory_capacity`).

1. By GPU memory: chunked_prefill_size and the decode CUDA-graph max batch size
   (MiB bounds; the batch size when tp < 4, else the second one):
   < 20 GiB: 2,048, 8 · < 35 GiB: 4,096, 48 / 160 · < 60 GiB: 4,096, 32 / 160 ·
   < 90 GiB: 8,192, 256 / 512 · < 160 GiB: 8,192, 256 / 512 · else 16,384, 512.
2. reserved (MiB) = 512 + max(chunked, 2048)·1.5 + tp·pp/8·1024 + max_bs·2 (decode graphs)
   (+ max_bs·dp·3, + max_bs·dp·1.5 more when max_bs > 300, under DP attention)
   + the prefill graphs (8 MiB per captured size, 58 up to 8,192 tokens, or 1,536 MiB for an
   MLA model; none when the backend is off: `kvledger.sglang.cudagraphs`);
   at least 10,240 on GPUs above 60 GiB.
3. mem_fraction_static = round((gpu_mem − reserved) / gpu_mem, 3), then × 0.95 × a ViT
   factor for multimodal models (clamp(1 − 0.1·(layers·hidden² / (24·1024²) − 1), 0.8, 1.05)).
4. Roles (`--disaggregation-mode`; memory_hook.py `handle_gpu_memory_settings` and
   `reserve_for_graph_mb`, both releases): a decode server's activations are
   max(running requests · draft tokens, 2048) tokens instead of the prefill chunk (running
   requests = --max-running-requests as given, else the decode CUDA-graph max bs), reserves
   no prefill CUDA graphs and skips the ViT factor (`is_vlm` excludes decode); a prefill
   server reserves no decode CUDA graphs and no DP-attention padding. Assumption: the draft
   tokens are the deployment's, which kvledger's launch parser may have derived from
   --speculative-num-steps; SGLang reads the flag before its speculative hook derives it
   (None → 1). The two agree whenever
   requests × draft tokens ≤ 2,048, the floor.
5. 0.5.23 caps the default decode CUDA-graph max bs at --max-running-requests (as given)
   before reserving (`RuleSet.cuda_graph_max_bs_capped_by_requests`); 0.5.21 does not.

Not counted:
- DeepEP all-to-all buffers (`reserve_for_deepep_a2a_mb`, 2 GiB): only with
  `--moe-a2a-backend deepep`; the default backend is "none", so off by default is right.
- post-capture KV sizing (`post_capture_kv_sizing_planned`): env-gated, off by default.
- the chunked-prefill and capture-size flags (--chunked-prefill-size, --cuda-graph-max-bs-*,
  --cuda-graph-bs-*): kvledger takes the GPU's defaults.

H100 80 GB (81,559 MiB), tp 1, a text model (breakable prefill graphs, 58 sizes):
reserved = 512 + 12,288 + 128 + 512 + 464 = 13,904 MiB; fraction = round(67,655 / 81,559, 3)
= 0.83.

>>> auto_mem_fraction_static(81_559, tp=1).fraction
0.83
>>> h200 = auto_mem_fraction_static(143_771, tp=8, dp=8, dp_attention=True)
>>> h200.reserved_mib, h200.fraction  # 13,824 + 1,024 + 512·8·3 + 512·8·1.5 + 464
(33744.0, 0.765)
"""

from __future__ import annotations

from dataclasses import dataclass

from kvledger.core.units import MiB
from kvledger.sglang.choices import DisaggMode
from kvledger.sglang.cudagraphs import CUDA_DEFAULT, CudaGraphs

# Memory the process holds before weights load (CUDA context, NCCL, the allocator), which
# SGLang's pre-load reading (`get_available_gpu_memory` at init) does not see as free. From a
# real H100 boot log of Llama-3.1-8B: "Load weight end … avail mem=63.48 GB, mem usage=15.11
# GB" → 78.59 GiB free before load of the 81,559 MiB total = 1.057 GiB (±0.01 from rounding).
# Assumed the same on every GPU; --available-gib bypasses it.
CUDA_CONTEXT_BYTES = 1_082 * MiB

_MIB_PER_GIB = 1024
# (upper bound in MiB, chunked_prefill_size, max_bs with tp < 4, max_bs with tp ≥ 4)
_BUCKETS = (
    (20 * _MIB_PER_GIB, 2048, 8, 8),  # T4, 4080
    (35 * _MIB_PER_GIB, 4096, 48, 160),  # A10, 4090, 5090
    (60 * _MIB_PER_GIB, 4096, 32, 160),  # A100 40GB, L40
    (90 * _MIB_PER_GIB, 8192, 256, 512),  # H100, A100 80GB
    (160 * _MIB_PER_GIB, 8192, 256, 512),  # H20, H200
)
_LARGEST = (16384, 512, 512)  # B200, MI300
VIT_BASELINE = 24 * 1024**2  # ViT-L/14: 24 layers × 1024²


@dataclass(frozen=True, slots=True, kw_only=True)
class MemFraction:
    fraction: float
    gpu_mem_mib: float
    chunked_prefill_size: int
    cuda_graph_max_bs: int
    reserved_mib: float
    vit_factor: float  # 1.0 for text-only models
    activation_tokens: int = 0  # the tokens the activation reserve scales with (module doc, 4)
    role: DisaggMode = DisaggMode.NULL
    graphs: CudaGraphs = CUDA_DEFAULT  # the CUDA-graph backends reserved for
    prefill_graph_mib: float = 0  # the prefill graphs' share of reserved_mib

    def derivation(self) -> str:
        vlm = f" × {self.vit_factor:.4f} (ViT)" if self.vit_factor != 1.0 else ""
        return (f"mem_fraction_static = round(({self.gpu_mem_mib:,.0f} − "
                f"{self.reserved_mib:,.0f} reserved MiB) / {self.gpu_mem_mib:,.0f}, 3){vlm} = "
                f"{self.fraction:g} ({self.role.label}: activations of "
                f"{self.activation_tokens:,} tokens, chunked prefill "
                f"{self.chunked_prefill_size:,}, cuda graph "
                f"max bs {self.cuda_graph_max_bs}, prefill graphs "
                f"{self.graphs.prefill.value} ({self.graphs.prefill_why}): "
                f"{self.prefill_graph_mib:,.0f} MiB)")


def auto_mem_fraction_static(
    gpu_mem_mib: float, *, tp: int, pp: int = 1, dp: int = 1, dp_attention: bool = False,
    vit: tuple[int, int] | None = None, role: DisaggMode = DisaggMode.NULL,
    max_running_requests: int | None = None, draft_tokens: int = 0,
    cap_max_bs_by_requests: bool = False, graphs: CudaGraphs = CUDA_DEFAULT,
) -> MemFraction:
    """SGLang's fraction for a GPU of `gpu_mem_mib` MiB; `vit` = (layers, hidden) of a vision
    tower when the model is multimodal; `role` a prefill/decode server's (module doc, 4);
    `max_running_requests` as given (the speculative default of 48 is set after this hook);
    `graphs` the CUDA-graph backends (default: a text model's on CUDA, breakable prefill).

    >>> auto_mem_fraction_static(143_771, tp=8, role=DisaggMode.DECODE,
    ...                          max_running_requests=64).reserved_mib  # 512 + 2048·1.5 + 1024 + 1024
    10240
    """
    if not gpu_mem_mib > 0:
        raise ValueError(f"GPU memory {gpu_mem_mib} MiB: expected a positive size")
    chunked, small_bs, large_bs = next(
        ((c, s, big) for bound, c, s, big in _BUCKETS if gpu_mem_mib < bound), _LARGEST)
    chunked = graphs.chunked_prefill_size or chunked  # a default the backend choice set
    max_bs = small_bs if tp < 4 else large_bs
    if cap_max_bs_by_requests and max_running_requests is not None:
        max_bs = min(max_bs, max_running_requests)  # the rule set's cap (module doc, 5)
    if role.is_decode:  # the activation working set is the running batch's draft tokens
        activation_tokens = max((max_running_requests or max_bs) * max(draft_tokens, 1), 2048)
    else:
        activation_tokens = max(chunked, 2048)  # the largest prefill chunk
    reserved = (512  # constant metadata (attention backends)
                + activation_tokens * 1.5  # activations
                + tp * pp / 8 * 1024)  # large parallel sizes
    reserved += graphs.decode_reserve_mib(max_bs, role)  # decode CUDA graphs
    if dp_attention and not role.is_prefill:
        reserved += max_bs * dp * 3  # DP attention padding
        if max_bs > 300:
            reserved += max_bs * dp * 1.5
    prefill_graphs = graphs.prefill_reserve_mib(chunked, role)
    reserved += prefill_graphs
    if gpu_mem_mib > 60 * _MIB_PER_GIB:
        reserved = max(reserved, 10 * _MIB_PER_GIB)
    fraction = round((gpu_mem_mib - reserved) / gpu_mem_mib, 3)
    factor = 1.0
    if vit is not None and not role.is_decode:  # a decode server loads no vision tower
        layers, hidden = vit
        ratio = layers * hidden**2 / VIT_BASELINE
        factor = 0.95 * max(0.8, min(1.05, 1.0 - 0.1 * (ratio - 1.0)))
        fraction *= factor
    if fraction <= 0:
        raise ValueError(f"GPU memory {gpu_mem_mib:,.0f} MiB: SGLang reserves {reserved:,.0f} "
                         "MiB of it, leaving no static memory; pass --mem-fraction-static")
    return MemFraction(fraction=fraction, gpu_mem_mib=gpu_mem_mib, chunked_prefill_size=chunked,
                       cuda_graph_max_bs=max_bs, reserved_mib=reserved, vit_factor=factor,
                       activation_tokens=activation_tokens, role=role, graphs=graphs,
                       prefill_graph_mib=prefill_graphs)
