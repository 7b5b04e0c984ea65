"""Rule sets: engine behaviour that changed between SGLang releases, as declarative objects.

`sglang-0.5.21` is the release the article dissects (the default); `sglang-0.5.23` carries the
later DSA page, indexer and host-tier rules; `sglang-0.5.8` and `sglang-0.5.9` the earlier
budgets (state slots without the padding slot, the unscaled DSA cell, the ROCm DSA page, …),
which differ from each other in one field. Code asks a rule set a question instead of
comparing version strings.

>>> r21, r23 = RULES["sglang-0.5.21"], RULES["sglang-0.5.23"]
>>> r21.dsa_page_tokens(kpool=4), r23.dsa_page_tokens(kpool=4)
(64, 256)
>>> r21.indexer_reserved_bytes(row_bytes=132, kpool=4), r23.indexer_reserved_bytes(row_bytes=132, kpool=4)
(132, 33)
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kvledger.core.registry import RuleRegistry
from kvledger.core.units import MiB, cdiv
from kvledger.sglang.cudagraphs import GRAPHS_0521, GRAPHS_0523, GraphRules

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
    # Which CUDA-graph backend each phase gets and what the automatic fraction reserves for it
    # (kvledger.sglang.cudagraphs: 0.5.21 turns breakable off for every KDA model and accepts
    # tc_piecewise; 0.5.23 keeps breakable for GLM-5.3-Flash and removed tc_piecewise).
    cuda_graphs: GraphRules = GRAPHS_0521
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

    # --- Read from 0.5.8 and 0.5.9 (files under python/sglang/srt/ of each wheel); each
    # default is 0.5.21's and 0.5.23's behaviour. ---
    # True: the state budget charges the padding slot, K = floor(B / S) − 1 and (K + 1)·S
    # leave the token budget (0.5.21 kv_cache_configurator `_handle_max_mamba_cache`);
    # False: K = floor(B / S) and K·S (0.5.8/0.5.9 model_executor/model_runner_kv_cache_mixin.py
    # `ModelRunnerKVCacheMixin.handle_max_mamba_cache`: `mamba_state_memory =
    # max_mamba_cache_size * mamba_cache_per_req`), though MambaPool still allocates K + 1.
    state_budget_charges_padding_slot: bool = True
    # True: with speculative decoding K and the verify scratch are solved together, the scratch
    # S·(n + 1)·D for n = min(limit, K // ratio) (0.5.21); False: S·n·D for n = --max-running-
    # requests // attn_dp leaves the rest before the state pool is sized, whichever branch
    # sizes it (0.5.8/0.5.9 `handle_max_mamba_cache`, "reserve the memory for the intermediate
    # mamba states used for spec dec").
    verify_scratch_solved_with_state: bool = True
    # State slots with the radix cache off and neither --max-running-requests nor
    # --max-mamba-cache-size set (then // attn_dp); None: the memory ratio sizes the pool
    # (0.5.9, 0.5.21). 0.5.8 `handle_max_mamba_cache`: `server_args.max_mamba_cache_size = 512`.
    radix_off_default_state_slots: int | None = None
    # True: `--mamba-scheduler-strategy auto` is extra_buffer with the triton linear-attention
    # backend (0.5.21); False: auto is always no_buffer (0.5.8/0.5.9 server_args.py
    # `ServerArgs._handle_missing_default_values`: "when extra_buffer is more verified, we can
    # set the default path based on [overlap, non-overlap]").
    auto_strategy_extra_buffer: bool = True
    # True: extra_buffer's ping-pong track slots are 2 with the overlap scheduler, 1 without
    # (0.5.21); False: 2 without speculative decoding, 1 with it (0.5.8/0.5.9
    # mem_cache/memory_pool.py `HybridReqToTokenPool.__init__`
    # `mamba_ping_pong_track_buffer_size = 2 if speculative_num_draft_tokens is None else 1`,
    # and `init_memory_pool`'s additional ratio).
    track_slots_follow_overlap: bool = True
    # True: the token budget's per-token cell is the row as allocated (656 B per layer for a
    # scaled-fp8 DeepSeek-V3.2 latent row); False: the cell counts (kv_lora_rank + rope) × 1 B
    # per layer while NSATokenToKVPool allocates the scaled row (0.5.8/0.5.9
    # `ModelRunnerKVCacheMixin.get_cell_size_per_token`), so the pool outgrows its budget.
    dsa_budget_cell_is_row: bool = True
    # True: the token budget's cell counts the MTP draft layers' KV when speculating (0.5.21);
    # False: the target sizes T from its own layers and the draft worker allocates its pool
    # for the same T outside that budget (0.5.8/0.5.9 `profile_max_num_token`:
    # `num_effective_layers`, the draft's `draft_runner_cache_size`).
    budget_counts_draft_layers: bool = True
    # True: fp8 DSA on a GPU of capability ≥ 10 defaults to the trtllm backend and its raw
    # row (0.5.21 `_dsa_split_backend_resolution`); False: fp8 defaults to flashmla_auto /
    # flashmla_kv on every GPU (0.5.8 server_args.py `_handle_model_specific_adjustments`;
    # 0.5.9 `ServerArgs._set_default_nsa_backends`).
    dsa_fp8_trtllm_on_sm100: bool = True
    # True: a trtllm DSA backend stores the raw fp8 row (0.5.9 `calculate_mla_kv_cache_dim`,
    # 0.5.21); False: NSATokenToKVPool stores the scaled fp8 row whatever the backend (0.5.8
    # mem_cache/memory_pool.py `NSATokenToKVPool.__init__` always passes override_kv_cache_dim).
    dsa_trtllm_row_raw: bool = True
    # The DSA page on ROCm; None: not decided by the deployment (0.5.21/0.5.23
    # arg_groups/model_overrides/deepseek_v2.py: 1 when aiter's preshuffle paged-MQA kernel is
    # unavailable, else 64). 0.5.8/0.5.9 `_handle_model_specific_adjustments`: `if is_hip():
    # self.page_size = 1`.
    rocm_dsa_page_tokens: int | None = None
    # True: N is capped at T // 2 whether or not --max-running-requests is set (0.5.21
    # `resolve_max_num_reqs`); False: only when it is unset (0.5.8/0.5.9 model_runner.py
    # `ModelRunner.initialize`, "Init max running requests").
    requests_capped_at_half_tokens_when_set: bool = True
    # True: kvledger's table of SGLang's automatic --mem-fraction-static
    # (kvledger.sglang.memfraction) was read from this release; False: a plan from a GPU needs
    # --mem-fraction-static (0.5.8/0.5.9 `ServerArgs._handle_gpu_memory_settings` buckets
    # differ: under 35 GiB chunked_prefill_size 2,048 and max bs 24 / 80, and 2 GiB more is
    # reserved for an EAGLE draft, 6 GiB for STANDALONE).
    auto_mem_fraction_read: bool = True
    # True: --dcp-size exists (0.5.21, 0.5.23); False: the release has no decode context
    # parallelism (no dcp_size in 0.5.8's or 0.5.9's ServerArgs).
    has_dcp: bool = True

    def dsa_page_tokens(self, kpool: int) -> int:
        return DSA_PAGE_KEYS * kpool if self.page_scales_with_kpool else DSA_PAGE_KEYS

    def indexer_reserved_bytes(self, row_bytes: int, kpool: int) -> int:
        """Bytes per token per indexer layer that the index cache reserves."""
        return cdiv(row_bytes, kpool) if self.indexer_reserves_pooled else row_bytes


# 0.5.8: what its source says where kvledger models a release difference (the fields above).
# Fields the release predates (kpool page scaling, the host tier's index pool, the PD and DCP
# refinements) keep the 0.5.21 values that mean "not yet"; what is not a field (the default
# attention backend per GPU, PD role pools, HiCache) follows 0.5.21 and was not checked
# against 0.5.8 or 0.5.9.
SGLANG_058 = RuleSet(
    name="sglang-0.5.8",
    read_from_patch=8,
    page_scales_with_kpool=False,
    indexer_reserves_pooled=False,
    host_row_matches_device=False,
    host_indexer_pool=False,
    # no multimodal reservation before the pools (model_runner_kv_cache_mixin.py
    # `profile_max_num_token`: rest = available − total·(1 − mem_fraction_static))
    vlm_cache_reserve_bytes=0,
    # mem_cache/mamba_radix_cache.py `MambaRadixCache._iteratively_delete_tombstone_leaf`
    tree_keeps_stateless_kv=False,
    state_budget_charges_padding_slot=False,
    verify_scratch_solved_with_state=False,
    radix_off_default_state_slots=512,
    auto_strategy_extra_buffer=False,
    track_slots_follow_overlap=False,
    dsa_budget_cell_is_row=False,
    budget_counts_draft_layers=False,
    dsa_fp8_trtllm_on_sm100=False,
    dsa_trtllm_row_raw=False,
    rocm_dsa_page_tokens=1,
    requests_capped_at_half_tokens_when_set=False,
    auto_mem_fraction_read=False,
    has_dcp=False,
)
# 0.5.9 differs from 0.5.8 in two fields: the radix-off state pool without a limit is sized
# by the ratio (`handle_max_mamba_cache`'s new `elif`), and a trtllm DSA backend stores the raw
# row (`calculate_mla_kv_cache_dim`). The rest was read again in 0.5.9's wheel and agrees.
SGLANG_059 = replace(SGLANG_058, name="sglang-0.5.9", read_from_patch=9,
                     radix_off_default_state_slots=None, dsa_trtllm_row_raw=True)

RULES: RuleRegistry[RuleSet] = RuleRegistry(
    (
        SGLANG_058,
        SGLANG_059,
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
            cuda_graphs=GRAPHS_0523,
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
