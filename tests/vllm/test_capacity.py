"""Blocks, concurrency, the logged token line and vLLM's start-up refusals.

Formulas: get_kv_cache_config_from_groups (num_blocks = available // bytes per block),
get_max_concurrency_for_kv_cache_config, _report_kv_cache_config (0.13's logged tokens),
get_kv_cache_capacity (0.33's), _check_enough_kv_cache_memory and
CompilationConfig.resolve_cudagraph_mode_and_sizes (vllm/v1/core/kv_cache_utils.py,
kv_cache_planning.py, vllm/config/compilation.py).
"""

from __future__ import annotations

import pytest

from kvledger.core.units import GiB, MiB
from kvledger.vllm.capacity import KVCacheMemoryError
from kvledger.vllm.deploy import VllmDeployment
from kvledger.vllm.plan import make_vllm_plan
from kvledger.vllm.rules import MambaCacheMode


def test_the_issues_qwen3_next_2xh200_log():
    # The issue's deployment logs 973,760 tokens and 14.77×: 0.10–0.13's formulas, with the
    # logged 44.59 GiB of KV cache memory.
    p = make_vllm_plan("qwen3-next-80b-a3b-instruct", VllmDeployment(tensor_parallel_size=2),
                       rules="vllm-0.13", gpu="h200", available_gib=44.59)
    cap = p.capacity
    assert cap.available_bytes == int(44.59 * GiB)
    assert cap.num_blocks == cap.available_bytes // (12 * 557_056) == 7162
    assert cap.logged_tokens == 7162 // 4 * 544 == 973_760
    assert f"{cap.max_concurrency:.2f}" == "14.77" and cap.blocks_per_request == 485
    assert cap.binding == "KV-cache blocks"


def test_033_logs_concurrency_times_max_model_len():
    p = make_vllm_plan("qwen3-next-80b-a3b-instruct", VllmDeployment(tensor_parallel_size=2),
                       rules="vllm-0.33", gpu="h200", available_gib=44.59)
    cap = p.capacity
    assert cap.num_blocks == int(44.59 * GiB) // (12 * 589_824) == 6764
    # 456 attention blocks + 3 Mamba groups × (2 + 1 prefill checkpoint): vLLM 0.33's own
    # planning (oracle/vllm/sizing.py, pretended H200) gives 465 too
    assert cap.blocks_per_request == 465
    assert cap.logged_tokens == int(6764 / 465 * 262_144) == 3_813_208


def test_dense_llama_blocks_and_tokens_agree_across_releases():
    for rules in ("vllm-0.13", "vllm-0.33"):
        p = make_vllm_plan("llama-3.1-8b", rules=rules, available_gib=40)
        assert p.capacity.num_blocks == 40 * GiB // (32 * 65_536) == 20_480
        assert p.capacity.max_concurrency == 20_480 / 8192
        assert p.capacity.logged_tokens == 327_680


def test_gpu_budget_033_subtracts_every_measured_term():
    p = make_vllm_plan("llama-3.1-8b", VllmDeployment(gpu_memory_utilization=0.9),
                       rules="vllm-0.33", gpu="h100", weights_gib=15, activation_gib=2,
                       non_torch_gib=0.5, cudagraph_gib=0.25)
    total = 81_559 * MiB
    requested = -(-int(total * 9) // 10)  # ceil(total × 0.9): the total is a whole number of MiB
    expected = requested - 15 * GiB - 2 * GiB - GiB // 2 - GiB // 4
    assert p.memory.available_bytes == expected
    assert p.ledgers.memory.total_bytes == expected
    assert not any("taken as 0" in n for n in p.notes)  # every measured term was given
    # the one default left is said: vLLM's max_num_seqs on an H100 (vllm/engine/arg_utils.py)
    assert [n for n in p.notes if "not given" in n] == [
        "--max-num-seqs not given: vLLM's default 1,024 on H100"]


def test_gpu_budget_013_ignores_cudagraphs_and_says_so():
    p = make_vllm_plan("llama-3.1-8b", rules="vllm-0.13", gpu="h100", weights_gib=15,
                       activation_gib=2, non_torch_gib=0.5, cudagraph_gib=0.25)
    assert p.memory.available_bytes == int(81_559 * MiB * 0.9) - 15 * GiB - 2 * GiB - GiB // 2
    assert any("--cudagraph-gib ignored" in n for n in p.notes)


def test_unmeasured_terms_are_named_in_notes():
    p = make_vllm_plan("llama-3.1-8b", rules="vllm-0.33", gpu="h200")
    assert any("--activation-gib, --non-torch-gib, --cudagraph-gib not given" in n for n in p.notes)


def test_one_request_must_fit_with_estimate():
    # 0.33 plans against the memory less the null block: 511 usable blocks of 16 tokens.
    with pytest.raises(KVCacheMemoryError, match="estimated maximum model length is 8176"):
        make_vllm_plan("llama-3.1-8b", rules="vllm-0.33", available_gib=1)
    with pytest.raises(KVCacheMemoryError, match="estimated maximum model length is 8192"):
        make_vllm_plan("llama-3.1-8b", rules="vllm-0.13", available_gib=1)
    ok = make_vllm_plan("llama-3.1-8b", VllmDeployment(max_model_len=8176), rules="vllm-0.33",
                        available_gib=1)
    assert ok.capacity.num_blocks == 512


def test_max_num_seqs_beyond_the_blocks_is_refused_for_hybrids():
    dep = VllmDeployment(tensor_parallel_size=2, max_model_len=8192, max_num_seqs=2000)
    with pytest.raises(KVCacheMemoryError, match=r"max_num_seqs \(2000\) exceeds available "
                                                 r"Mamba cache blocks \(1606\)"):
        make_vllm_plan("qwen3-next-80b-a3b-instruct", dep, rules="vllm-0.13", available_gib=10)
    eager = make_vllm_plan("qwen3-next-80b-a3b-instruct",
                           VllmDeployment(tensor_parallel_size=2, max_model_len=8192,
                                          max_num_seqs=2000, enforce_eager=True),
                           rules="vllm-0.13", available_gib=10)
    assert eager.capacity.num_blocks == 10 * GiB // 6_684_672 == 1606
    assert eager.capacity.binding == "KV-cache blocks"


def test_max_num_seqs_binds_when_below_concurrency():
    p = make_vllm_plan("llama-3.1-8b", VllmDeployment(max_num_seqs=2, max_model_len=8192),
                       rules="vllm-0.33", available_gib=40)
    assert p.capacity.binding == "--max-num-seqs 2"


def test_013_refuses_align_mode():
    # an explicit --mamba-cache-mode align is refused (0.13 has no such mode); a bare
    # --enable-prefix-caching is turned off instead (test_layout_golden)
    with pytest.raises(ValueError, match="--mamba-cache-mode align: vllm-0.13 supports none"):
        make_vllm_plan("qwen3-next-80b-a3b-instruct",
                       VllmDeployment(tensor_parallel_size=2, enable_prefix_caching=True,
                                      mamba_cache_mode=MambaCacheMode.ALIGN),
                       rules="vllm-0.13", available_gib=40)
    on = make_vllm_plan("qwen3-next-80b-a3b-instruct",
                        VllmDeployment(tensor_parallel_size=2, enable_prefix_caching=True),
                        rules="vllm-0.13", available_gib=44.59)
    assert on.capacity.num_blocks == 7162 and not on.layout.prefix_caching  # as without it


def test_glm53_flash_on_one_rank_refuses_the_default_max_num_seqs():
    # block 128 × cdiv(4,341,760, 128 × 1,024) = 4,352; 40 GiB // 11 × (4,352 × 1,024 +
    # 1,088 × 132) B = 848 blocks < 1,024 sequences
    with pytest.raises(KVCacheMemoryError, match=r"max_num_seqs \(1024\) exceeds available "
                       r"Mamba cache blocks \(848\)"):
        make_vllm_plan("glm-5.3-flash", rules="vllm-0.33", available_gib=40)


def test_lost_bytes_itemise_padding_tails_and_reservations():
    p = make_vllm_plan("qwen3-next-80b-a3b-instruct", VllmDeployment(tensor_parallel_size=2),
                       rules="vllm-0.13", available_gib=44.59)
    per_request = {r.component: r.total_bytes for r in p.ledgers.lost_per_request.rows}
    # 482 blocks × 544 = 262,208 tokens: a 64-token tail × 12 layers × 1,024 B
    assert per_request["last attention block, empty tail"] == 64 * 12 * 1024
    assert p.ledgers.lost_per_request.total_bytes == 64 * 12 * 1024 + 3 * 12 * 8192
    per_rank = {r.component: r.total_bytes for r in p.ledgers.lost_per_rank.rows}
    assert per_rank["null block"] == 6_684_672
    assert per_rank["memory past the last whole block"] == int(44.59 * GiB) - 7162 * 6_684_672
    assert p.lost_bytes == p.ledgers.lost_per_rank.total_bytes + 14 * p.ledgers.lost_per_request.total_bytes


def test_short_groups_show_their_padding_layers():
    p = make_vllm_plan("nemotron-h-56b-base-8k",
                       VllmDeployment(tensor_parallel_size=4, max_num_seqs=256),
                       rules="vllm-0.13", available_gib=40)
    rows = [r for r in p.ledgers.lost_per_request.rows if r.component.startswith("padding layers")]
    assert len(rows) == 6 and all(r.count == 1 and r.unit_bytes == 4128 * 1024 for r in rows)


def test_memory_sources_are_exclusive():
    with pytest.raises(ValueError, match="--available-gib and --kv-cache-memory-bytes"):
        make_vllm_plan("llama-3.1-8b", VllmDeployment(kv_cache_memory_bytes=GiB * 40),
                       available_gib=40)
    with pytest.raises(ValueError, match="needs --gpu, --available-gib"):
        make_vllm_plan("llama-3.1-8b")
    p = make_vllm_plan("llama-3.1-8b", VllmDeployment(kv_cache_memory_bytes=40 * GiB))
    assert p.capacity.num_blocks == 20_480


def test_default_max_num_seqs_follows_the_gpu():
    # EngineArgs._set_default_args: 1024 on ≥ 70 GiB GPUs other than the A100, else 256.
    from kvledger.core.gpus import get_gpu
    from kvledger.vllm.rules import RULES

    rules = RULES["vllm-0.33"]
    assert rules.default_max_num_seqs(get_gpu("h200")) == 1024
    assert rules.default_max_num_seqs(get_gpu("RTX 5090")) == 256
    assert rules.default_max_num_seqs(get_gpu("A100 80GB")) == 256
    p = make_vllm_plan("llama-3.1-8b", rules="vllm-0.33", available_gib=40)
    assert p.capacity.max_num_seqs == 1024 and any("--max-num-seqs not given" in n for n in p.notes)
