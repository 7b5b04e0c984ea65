"""Decode and prefill context parallelism: the sizes vLLM accepts, and what DCP does to a request.

--decode-context-parallel-size (DCP) reuses the TP ranks: a DCP group of d ranks holds each
request's tokens interleaved over its ranks (token t on rank t mod d, with
`cp_kv_cache_interleave_size` 1), so every rank stores cdiv(len, d) tokens of a request.
`FullAttentionSpec.max_memory_usage_bytes` (vllm/v1/kv_cache_interface.py; MLA inherits it)
divides max_model_len by d before counting blocks, and `get_max_concurrency_for_kv_cache_config`
(v1/core/kv_cache_utils.py) divides the blocks by that: the logged "Maximum concurrency" and
"GPU KV cache size" (int(concurrency × max_model_len)) grow by about d. State layers
(`MambaSpec`, not `dcp_sharded`) keep a whole state per request on every rank. The KV heads a
rank holds do not change: a GQA layer keeps max(1, kv_heads // tp) heads per rank, and DCP
needs tp > kv_heads, so that the ranks replicating one head can hold different tokens
instead; an MLA latent is on every rank anyway.

--prefill-context-parallel-size (PCP) adds ranks (world size TP × PCP × PP,
`ParallelConfig.__post_init__`, vllm/config/parallel.py) that split a prefill; in 0.33 "PCP
expands the process world size but does not increase the KV-cache shard count" (the field's
doc), so the KV per rank is as without it unless DCP spans the PCP ranks.

The checks, in vLLM's order (each refusal quotes vLLM's message):
1. `ParallelConfig._validate_parallel_config` (config/parallel.py): without PCP "tp_size={tp}
   must be divisible by dcp_size={dcp}"; with PCP (0.33) "When PCP is enabled, DCP must be
   disabled, span the PCP axis, or span the full TP x PCP axis" (DCP in {1, pcp, tp × pcp});
2. `ModelConfig.verify_with_parallel_config` (config/model.py), GQA only: tp > total KV heads,
   dcp ≤ tp // KV heads, and query heads per KV head divisible by dcp (asserts in 0.24);
3. the attention backends (`kvledger.vllm.backends`): 0.33's selector skips a backend without
   `supports_dcp` / `supports_pcp` (`AttentionBackend.validate_configuration`,
   v1/attention/backend.py) and refuses with "No valid attention backend found" when none is
   left; 0.24's picks as it would without them, then `check_attention_cp_compatibility`
   (v1/worker/cp_utils.py) asserts each impl returns the softmax LSE ("Decode Context
   Parallelism (DCP) requires attention implementations to return the softmax LSE during
   decode") and supports PCP (no 0.24 impl does); state layers' backends have no PCP (0.33:
   "PCP requires attention backend support, but GDN_ATTN does not support PCP");
4. 0.24 only: `resolve_kv_cache_block_sizes` (v1/core/kv_cache_utils.py) refuses several
   KV-cache groups (every hybrid) under DCP: "Hybrid KV cache groups with multiple block
   sizes do not support context parallelism".
Checked with vLLM 0.33.0's and 0.24.0's own planning (tests/data/oracle/vllm-*-scale-out.jsonl).

>>> from kvledger.model.config import load_model
>>> from kvledger.vllm.deploy import VllmDeployment
>>> rules = CP_033
>>> check_sizes(load_model("llama-3.1-8b"), VllmDeployment(tensor_parallel_size=8,
...             decode_context_parallel_size=2), rules)
Traceback (most recent call last):
...
kvledger.core.errors.DeploymentError: --decode-context-parallel-size 2: vLLM refuses it (Decode context parallelism for GQA/MQA requires `--tensor-parallel-size` (8) to be greater than the model's total number of KV heads (8))
>>> local_tokens(163_840, 8)
20480
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kvledger.core.errors import DeploymentError
from kvledger.core.units import cdiv
from kvledger.model.arch import AttnKind

if TYPE_CHECKING:
    from kvledger.model.arch import ModelArch
    from kvledger.vllm.deploy import VllmDeployment


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextParallelRules:
    """What one release does with DCP and PCP (module doc)."""

    # 0.33: the selector skips attention backends without DCP support; 0.24: it picks the
    # usual backend and the model runner refuses one whose impl returns no softmax LSE.
    dcp_filters_backends: bool
    # Attention kinds with a PCP-capable backend (0.33: every MLA impl,
    # `MLAAttentionImpl.supports_pcp`; 0.24: none).
    pcp_attention: frozenset[AttnKind]
    # DCP may span the PCP ranks (0.33: DCP in {1, pcp, tp × pcp}); else tp % dcp always.
    dcp_spans_pcp: bool
    # A model of several KV-cache groups (a hybrid) takes DCP (0.24 refuses it).
    dcp_multi_group: bool


CP_033 = ContextParallelRules(dcp_filters_backends=True,
                              pcp_attention=frozenset({AttnKind.MLA, AttnKind.DSA}),
                              dcp_spans_pcp=True, dcp_multi_group=True)
CP_024 = ContextParallelRules(dcp_filters_backends=False, pcp_attention=frozenset(),
                              dcp_spans_pcp=False, dcp_multi_group=False)


def local_tokens(tokens: int, dcp: int) -> int:
    """Tokens of a request one DCP rank stores: cdiv(tokens, dcp)."""
    return cdiv(tokens, dcp)


def _refuse(flag: str, value: int, message: str) -> DeploymentError:
    return DeploymentError(f"{flag} {value}: vLLM refuses it ({message})")


def check_sizes(model: ModelArch, dep: VllmDeployment, rules: ContextParallelRules) -> None:
    """Steps 1 and 2 of the module doc: the sizes vLLM's config accepts."""
    tp, dcp = dep.tensor_parallel_size, dep.decode_context_parallel_size
    pcp = dep.prefill_context_parallel_size
    if pcp > 1 and rules.dcp_spans_pcp:
        if dcp not in (1, pcp, tp * pcp):
            raise _refuse("--decode-context-parallel-size", dcp,
                          "When PCP is enabled, DCP must be disabled, span the PCP axis, or "
                          f"span the full TP x PCP axis. Got TP={tp}, PCP={pcp}, DCP={dcp}; "
                          f"valid DCP sizes are {sorted({1, pcp, tp * pcp})}")
    elif tp % dcp:
        raise _refuse("--decode-context-parallel-size", dcp,
                      f"tp_size={tp} must be divisible by dcp_size={dcp}")
    if dcp == 1 or model.attn is not AttnKind.GQA:
        return
    assert model.gqa is not None
    kv = model.gqa.num_kv_heads
    if tp <= kv:
        raise _refuse("--decode-context-parallel-size", dcp,
                      "Decode context parallelism for GQA/MQA requires `--tensor-parallel-size` "
                      f"({tp}) to be greater than the model's total number of KV heads ({kv})")
    if dcp > tp // kv:
        raise _refuse("--decode-context-parallel-size", dcp,
                      f"`--decode-context-parallel-size` ({dcp}) exceeds the maximum supported "
                      f"value ({tp // kv}) for `--tensor-parallel-size` ({tp}) and {kv} model "
                      "KV heads")
    heads = model.gqa.num_heads
    if heads is not None and (heads // kv) % dcp:
        raise _refuse("--decode-context-parallel-size", dcp,
                      f"The model's number of query heads per KV head ({heads // kv}) must be "
                      "divisible by `--decode-context-parallel-size` "
                      f"({dcp}) for GQA/MQA")


def check_pcp_layers(model: ModelArch, dep: VllmDeployment, rules: ContextParallelRules) -> None:
    """Step 3 for PCP: every layer's attention backend must support it."""
    pcp = dep.prefill_context_parallel_size
    if pcp == 1:
        return
    if model.attn not in rules.pcp_attention:
        kind = "GQA" if model.attn is AttnKind.GQA else model.attn.value
        raise _refuse("--prefill-context-parallel-size", pcp,
                      f"no {kind} attention backend supports PCP: No valid attention backend "
                      "found" if rules.dcp_filters_backends else
                      "PCP requires attention impls' support; no attention backend of the "
                      "release supports PCP")
    if model.is_hybrid:
        raise _refuse("--prefill-context-parallel-size", pcp,
                      "PCP requires attention backend support, but the state layers' "
                      "attention backend does not support PCP")


def check_groups(num_groups: int, dep: VllmDeployment, rules: ContextParallelRules) -> None:
    """Step 4: several KV-cache groups under DCP (0.24 refuses, after sizing the pool)."""
    if dep.decode_context_parallel_size > 1 and num_groups > 1 and not rules.dcp_multi_group:
        raise _refuse("--decode-context-parallel-size", dep.decode_context_parallel_size,
                      "Hybrid KV cache groups with multiple block sizes do not support context "
                      "parallelism (dcp_world_size/pcp_world_size > 1)")
