"""Rule sets: engine behaviour that changed between SGLang releases, as declarative objects.

`sglang-0.5.21` is the release the article dissects (the default); `sglang-0.5.23` carries the
later DSA page, indexer and host-tier rules. Code asks a rule set a question instead of
comparing version strings.

>>> r21, r23 = RULES["sglang-0.5.21"], RULES["sglang-0.5.23"]
>>> r21.dsa_page_tokens(kpool=4), r23.dsa_page_tokens(kpool=4)
(64, 256)
>>> r21.indexer_reserved_bytes(row_bytes=132, kpool=4), r23.indexer_reserved_bytes(row_bytes=132, kpool=4)
(132, 33)
"""

from __future__ import annotations

from dataclasses import dataclass

from kvledger.core.registry import RuleRegistry
from kvledger.core.units import MiB, cdiv

# DSA kernels process 64 index keys per page (the CUDA assert `page_size / kpool == 64` in
# 0.5.22+); 0.5.21 used a 64-token page regardless of kpool.
DSA_PAGE_KEYS = 64


@dataclass(frozen=True, slots=True, kw_only=True)
class RuleSet:
    name: str
    # The 0.5.x patch release whose source these rules were read from (a log naming another
    # release is checked against the next rule set up: kvledger.logs.detect).
    read_from_patch: int
    # True: the DSA page holds 64 pooled keys (64·kpool tokens); False: 64 tokens.
    page_scales_with_kpool: bool
    # True: the index cache reserves ceil(row/kpool) bytes per token per layer; False: a full row.
    indexer_reserves_pooled: bool
    # True: the host KV row equals the device row; False: the host row drops the fp8 scales
    # (512 wide for a 528-byte device row), the article release's defect.
    host_row_matches_device: bool
    # True: index keys have a host side pool; False: they are lost on device eviction.
    host_indexer_pool: bool
    # True: a --max-running-requests below the attention-DP size gives max(1, limit // attn_dp)
    # per worker; False: refused (0 per worker).
    requests_floor_one_per_worker: bool = False
    # SGLANG_VLM_CACHE_SIZE_MB: reserved before the state pool when the config is multimodal.
    vlm_cache_reserve_bytes: int = 100 * MiB
    # True: a stateless ancestor left childless when a leaf is evicted keeps its KV. Both
    # releases' UnifiedTreeCore._iteratively_delete_tombstone_ancestors stop at device KV
    # (read in 0.5.21 and 0.5.23); 0.5.20's MambaRadixCache pruned it (see kvledger.tree.rules).
    tree_keeps_stateless_kv: bool = True
    # True: a prefill server charges the speculative verify scratch to the state budget
    # although `_build_hybrid_req_pool` never allocates it there (0.5.21); False: the budget
    # skips it too (0.5.23 `_pd_prefill_skips_mamba_spec_state`, both places).
    prefill_reserves_verify_scratch: bool = True
    # True: --disaggregation-decode-enable-radix-cache is refused with speculative decoding
    # other than DSPARK (0.5.21 handle_pd_disaggregation); 0.5.23 removed the check.
    decode_radix_refuses_speculative: bool = True
    # True: the default decode CUDA-graph max batch size is capped at --max-running-requests
    # (as given) before the fraction's graph reserve is sized (0.5.23 memory_hook
    # `handle_gpu_memory_settings`); False: the GPU bucket's size stands (0.5.21).
    cuda_graph_max_bs_capped_by_requests: bool = False
    # True: --dcp-size > 1 is refused for DSA models whose index keys pool several tokens
    # (0.5.23 arg_groups/model_overrides/deepseek_v2.py); 0.5.21 has no such check.
    dcp_refuses_pooled_index: bool = False
    # True: a decode server's per-worker limit for the extra-rows default is floored at 1
    # (0.5.23 handle_pd_disaggregation: max(1, limit // DP ranks)); False: limit // dp_size,
    # which is 0 below the DP size and then reserves nothing (0.5.21).
    decode_extra_slots_floor_one: bool = False

    # True: the shared-top-k layers' index keys are left out of the cell on a prefill/decode
    # server and with the host tier too (0.5.23 `_should_elide_dsa_index_k` excludes only NPU
    # cases); False: only an aggregated server without HiCache leaves them out (0.5.21's
    # checks `disaggregation_mode == "null"` and no hierarchical cache).
    elides_index_keys_with_pd_and_hicache: bool = False
    # True: --dcp-size > 1 with a DSA model follows 0.5.23's DSA DCP path: the index-K
    # buffer is replicated over the DCP group while the latent KV shards, so the cell charges
    # dcp × the index keys, and the EAGLE draft layers' KV and index keys dcp × too
    # (model_executor/pool_configurator.py `_compute_cell_size`, DefaultPoolConfigurator);
    # the DSA backends default to trtllm and PD disaggregation, HiCache and topk > 1 are
    # refused (arg_groups/model_overrides/deepseek_v2.py `_dsa_dcp_overrides`). False: DSA
    # sizes under DCP like any MLA model (0.5.21 has none of these).
    dsa_dcp_replicates_index_keys: bool = False
    # True: DFLASH counts as a given EAGLE topk when SGLang picks the default MHA attention
    # backend on SM100 (0.5.23 model_override_base.py `_forces_eagle_topk_one`: trtllm_mha and
    # its 64-token page); False: only an explicit --speculative-eagle-topk does (0.5.21).
    dflash_counts_as_topk_given: bool = False

    def dsa_page_tokens(self, kpool: int) -> int:
        return DSA_PAGE_KEYS * kpool if self.page_scales_with_kpool else DSA_PAGE_KEYS

    def indexer_reserved_bytes(self, row_bytes: int, kpool: int) -> int:
        """Bytes per token per indexer layer that the index cache reserves."""
        return cdiv(row_bytes, kpool) if self.indexer_reserves_pooled else row_bytes


RULES: RuleRegistry[RuleSet] = RuleRegistry(
    (
        RuleSet(
            name="sglang-0.5.21",
            read_from_patch=21,
            page_scales_with_kpool=False,
            indexer_reserves_pooled=False,
            host_row_matches_device=False,
            host_indexer_pool=False,
        ),
        RuleSet(
            name="sglang-0.5.23",
            read_from_patch=23,
            page_scales_with_kpool=True,
            indexer_reserves_pooled=True,
            host_row_matches_device=True,
            host_indexer_pool=True,
            requests_floor_one_per_worker=True,
            prefill_reserves_verify_scratch=False,
            decode_radix_refuses_speculative=False,
            cuda_graph_max_bs_capped_by_requests=True,
            dcp_refuses_pooled_index=True,
            decode_extra_slots_floor_one=True,
            elides_index_keys_with_pd_and_hicache=True,
            dflash_counts_as_topk_given=True,
            dsa_dcp_replicates_index_keys=True,
        ),
    ),
    default="sglang-0.5.21",
)
DEFAULT_RULES = RULES.default
get_rules = RULES.lookup
