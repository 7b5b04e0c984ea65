"""Decode context parallelism (`--dcp-size`): which deployments kvledger plans, and how.

Followed (sglang 0.5.21 and 0.5.23 wheels, python/sglang/srt/):
1. distributed/parallel_state.py `initialize_model_parallel`: DCP groups are consecutive ranks
   of a TP group, and "tensor_model_parallel_size (tp) must be divisible by
   decode_context_parallel_size (dcp)".
2. configs/model_config.py `get_num_kv_heads(attn_tp, dcp)`: "DCP ranks replicate KV, so heads
   shard across tp // dcp groups": max(1, kv_heads // (attn_tp // dcp)) per rank. An MLA
   latent row has no heads to shard; each rank keeps whole rows for its share of the tokens.
3. mem_cache/kv_cache_configurator.py `_build_token_to_kv_pool_allocator`: the paged
   allocator spans T · dcp logical slots in pages of page · dcp (`logical_token_capacity`);
   T itself, the physical rows per rank, is what the budget sizes and what
   `resolve_max_num_reqs` reads (T // 2 and the context heuristic use the physical T).
4. The state pool and its budget do not change (`_handle_max_mamba_cache` reads no DCP size).

5. DSA models (arg_groups/model_overrides/deepseek_v2.py): 0.5.23 refuses an index kpool > 1
   ("a pooled index key spans positions owned by different DCP ranks") and, in
   `_dsa_dcp_overrides`, PD disaggregation, HiCache and an EAGLE topk > 1; it defaults the
   DSA backends to trtllm, and the index-K buffer (and the EAGLE draft layers' KV and index
   keys) are replicated over the DCP group, so the cell charges them dcp × (pool_configurator.py
   `_compute_cell_size`; `RuleSet.dsa_dcp_replicates_index_keys`, kvledger.sglang.ledger).
   0.5.21 sizes a DSA model under DCP like any MLA model.
6. Speculative decoding: the budget charges the draft layers as without DCP (the EAGLE
   branch of DefaultPoolConfigurator scales them by dcp for DSA models only, in 0.5.23), but
   the draft worker's pools are replicated over the T × dcp logical slots
   (kv_cache_configurator.py `loc_space_scale`, both releases): they are allocated dcp ×
   what was charged. The plan sizes T as SGLang does and says so in a note.

Not modelled, refused with the reason:
- the host tier (arg_groups/hicache_hook.py `resolve_hicache_dcp_compatibility`).
- DCP groups wider than one attention-TP group (DP attention with attn_tp < dcp).

>>> from kvledger.model.config import load_model
>>> from kvledger.sglang.deploy import Deployment
>>> from kvledger.sglang.rules import RULES
>>> check_dcp(load_model("qwen3-next-80b-a3b-instruct"), Deployment(tp_size=8, dcp_size=4),
...           RULES["sglang-0.5.21"])
['--dcp-size 4: KV heads shard over tp 8 / dcp 4 = 2 groups; T counts physical rows per rank, a worker holds T × 4 tokens in pages of page × 4']
"""

from __future__ import annotations

from kvledger.model.arch import AttnKind, ModelArch
from kvledger.sglang.deploy import Deployment, DeploymentError, DisaggMode
from kvledger.sglang.rules import RuleSet


def kv_shard_groups(dep: Deployment) -> int:
    """The attention-TP width KV heads shard over: attn_tp // dcp (2. in the module doc)."""
    return dep.attn_tp_size // dep.dcp_size


def check_dcp(model: ModelArch, dep: Deployment, rules: RuleSet) -> list[str]:
    """Refuse what is not modelled (module doc); notes for a DCP deployment."""
    dcp = dep.dcp_size
    if dcp == 1:
        return []
    flag = f"--dcp-size {dcp}"
    if not rules.has_dcp:
        raise DeploymentError(f"{flag}: SGLang {rules.name.removeprefix('sglang-')} has no "
                              "decode context parallelism (no dcp_size in its ServerArgs)")
    notes = []
    if model.attn is AttnKind.DSA:
        assert model.indexer is not None
        kpool = model.indexer.kpool
        if kpool > 1 and rules.dcp_refuses_pooled_index:
            raise DeploymentError(
                f"{flag}: SGLang ({rules.name}) refuses it for {model.name}: \"--dcp-size > 1 "
                f"is not supported for DSA with index_kpool={kpool}: a pooled index key spans "
                "positions owned by different DCP ranks.\"")
        if rules.dsa_dcp_replicates_index_keys:
            _check_dsa_dcp(flag, dep, rules)
            notes.append(f"{flag} with DSA ({rules.name}): DSA backends trtllm; the index keys"
                         + (" and the draft layers" if dep.speculative else "")
                         + f" are replicated over the DCP group, {dcp} × per token")
    if dep.speculative and not (model.attn is AttnKind.DSA
                                and rules.dsa_dcp_replicates_index_keys):
        notes.append(f"{flag} with speculative decoding: the draft worker's pools span the "
                     f"T × {dcp} logical slots (replicated), {dcp} × the rows the budget "
                     "charged for them (`loc_space_scale`)")
    if dep.enable_hierarchical_cache:
        raise DeploymentError(f"{flag} with --enable-hierarchical-cache: kvledger does not "
                              "model the host tier under DCP (SGLang: \"HiCache with --dcp-size "
                              "> 1 is only supported for MLA models\")")
    if dep.attn_tp_size % dcp:
        raise DeploymentError(f"{flag}: kvledger models DCP groups inside one attention-TP "
                              f"group; attn_tp is {dep.attn_tp_size} (tp {dep.tp_size} / "
                              f"attn_dp {dep.attn_dp_size})")
    rows = (f"KV heads shard over tp {dep.attn_tp_size} / dcp {dcp} = {kv_shard_groups(dep)} "
            "groups" if model.attn is AttnKind.GQA else "latent rows are whole on every rank")
    return [f"{flag}: {rows}; T counts physical rows per rank, a worker holds T × {dcp} tokens "
            f"in pages of page × {dcp}", *notes]


def _check_dsa_dcp(flag: str, dep: Deployment, rules: RuleSet) -> None:
    """0.5.23 `_dsa_dcp_overrides` (arg_groups/model_overrides/deepseek_v2.py): its refusals."""
    said = None
    if dep.enable_hierarchical_cache:
        said = "DSA DCP does not support HiSparse or HiCache."
    elif dep.disaggregation_mode is not DisaggMode.NULL:
        said = "DSA DCP does not support PD disaggregation."
    elif dep.speculative_eagle_topk not in (None, 1):
        said = "DSA DCP requires --speculative-eagle-topk 1."
    if said:
        raise DeploymentError(f"{flag}: SGLang ({rules.name}) refuses it: \"{said}\"")
