"""Decode context parallelism: kvledger.sglang.dcp and its effect on the plan.

Engine source followed (sglang 0.5.21 and 0.5.23 release wheels, python/sglang/srt/):
configs/model_config.py `get_num_kv_heads` (heads over tp // dcp groups);
distributed/parallel_state.py `initialize_model_parallel` (dcp divides tp);
mem_cache/kv_cache_configurator.py `_build_token_to_kv_pool_allocator` (T · dcp logical slots,
pages of page · dcp) and `resolve_max_num_reqs` (the physical T);
arg_groups/model_overrides/deepseek_v2.py (0.5.23: the pooled index refusal and
`_dsa_dcp_overrides`); model_executor/pool_configurator.py `_compute_cell_size` and
DefaultPoolConfigurator (0.5.23: DSA index keys and draft layers replicated over DCP).
"""

from __future__ import annotations

import pytest

from kvledger.core.errors import DeploymentError
from kvledger.sglang.launch import parse_flags
from kvledger.sglang.plan import make_plan

QWEN = "qwen3-next-80b-a3b-instruct"  # 2 KV heads × 256, 12 full layers, bf16


def plan(flags, model=QWEN, rules="sglang-0.5.21", **kw):
    return make_plan(model, parse_flags(flags).deployment, rules=rules, **kw)


@pytest.mark.parametrize(("dcp", "heads"), [(1, 1), (2, 1), (4, 1), (8, 2)])
def test_kv_heads_shard_over_tp_over_dcp(dcp, heads):
    # max(1, 2 // (8 // dcp)): tp 8 alone replicates the 2 heads to 1 per rank
    p = plan(["--tp", "8", "--dcp-size", str(dcp)])
    assert p.layout.kv_row.kv_heads_per_rank == heads
    assert p.capacity.token_bytes == 12 * 2 * heads * 256 * 2


def test_t_is_physical_and_the_worker_holds_t_times_dcp():
    one, eight = plan(["--tp", "8"]), plan(["--tp", "8", "--dcp-size", "8"])
    # same budget and state pool; twice the bytes per physical row (2 heads, not 1)
    assert one.capacity.state_slots == eight.capacity.state_slots == 5_265
    assert (one.capacity.max_total_tokens, eight.capacity.max_total_tokens) == (
        4_599_057, 2_299_528)
    assert eight.capacity.logical_tokens == 2_299_528 * 8 == 18_396_224
    assert eight.totals.tokens == 18_396_224
    assert eight.layout.allocation_page_tokens == 8 * eight.layout.page_tokens
    # T // 2 reads the physical T
    assert eight.capacity.limits[next(k for k in eight.capacity.limits
                                      if k.code == "tokens")] == 2_299_528 // 2


def test_mla_rows_are_not_sharded():
    one = plan(["--tp", "8"], model="kimi-linear-48b-a3b-instruct")
    eight = plan(["--tp", "8", "--dcp-size", "8"], model="kimi-linear-48b-a3b-instruct")
    assert one.capacity.token_bytes == eight.capacity.token_bytes
    assert eight.capacity.max_total_tokens == one.capacity.max_total_tokens == 7_008_419
    assert eight.capacity.logical_tokens == 8 * 7_008_419


def test_workload_check_uses_the_logical_tokens():
    p = plan(["--tp", "8", "--dcp-size", "8"], requests=100, context_tokens=100_000)
    token_row = next(r for r in p.workload.rows if r.code == "tokens")
    assert token_row.capacity == 18_396_224 and token_row.need == 10_000_000 and token_row.fits
    assert plan(["--tp", "8"], requests=100, context_tokens=100_000).fits(None, None) is False


@pytest.mark.parametrize(("flags", "model", "rules", "message"), [
    (["--tp", "8", "--dcp-size", "8"], "glm-5.3-flash", "sglang-0.5.23",
     "not supported for DSA with index_kpool=4"),
    (["--tp", "8", "--dcp-size", "2", "--disaggregation-mode", "decode"], "deepseek-v3.2",
     "sglang-0.5.23", "DSA DCP does not support PD disaggregation"),
    (["--tp", "8", "--dcp-size", "2", "--speculative-algorithm", "EAGLE",
      "--speculative-num-steps", "3", "--speculative-eagle-topk", "2",
      "--speculative-num-draft-tokens", "6"], "deepseek-v3.2", "sglang-0.5.23",
     "DSA DCP requires --speculative-eagle-topk 1"),
    (["--tp", "8", "--dp", "8", "--enable-dp-attention", "--dcp-size", "2"], QWEN,
     "sglang-0.5.21", "inside one attention-TP group"),
    (["--tp", "8", "--dcp-size", "2", "--enable-hierarchical-cache"], QWEN, "sglang-0.5.21",
     "only supported for MLA models"),
])
def test_dcp_refusals(flags, model, rules, message):
    with pytest.raises(DeploymentError, match=message):
        plan(flags, model=model, rules=rules)


def test_dcp_in_json():
    doc = plan(["--tp", "8", "--dcp-size", "4"]).to_json()
    assert doc["deployment"]["dcp_size"] == 4
    assert doc["deployment"]["allocation_page_tokens"] == 4 * doc["deployment"]["page_tokens"]
    assert doc["capacity"]["logical_tokens"] == 4 * doc["capacity"]["max_total_tokens"]


EAGLE = ["--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3",
         "--speculative-eagle-topk", "1"]


def test_dsa_under_dcp_0_5_23_replicates_the_index_keys_and_the_draft():
    """0.5.23, DeepSeek-V3.2 fp8, tp 8, dcp 2, EAGLE: trtllm rows (576 B, `_dsa_dcp_overrides`
    on any GPU); `_compute_cell_size` charges the 132 B index keys × dcp, and the EAGLE branch
    the draft layer's KV and index keys × dcp: 61 × 576 + 61 × 132 × 2 + (576 + 132) × 2 =
    52,656 B, SGLang's own `_cell_size` for
    0.5.23|deepseek-v3.2|H100|fp8_e4m3|tp=8|dp=1|spec=4|radix=on|dcp2 (the recording)."""
    flags = ["--tp", "8", "--dcp-size", "2", "--kv-cache-dtype", "fp8_e4m3", *EAGLE]
    p = plan(flags, model="deepseek-v3.2", rules="sglang-0.5.23", gpu="H100",
             weights_gib=40)
    assert p.deployment.dsa_backend.value == "trtllm"
    assert p.ledgers.token.total_bytes == 61 * 576 + 61 * 132 * 2 == 51_240
    assert p.ledgers.draft_token.total_bytes == (576 + 132) * 2
    assert p.capacity.token_bytes == 52_656
    assert any("replicated over the DCP group" in note for note in p.notes)
    # 0.5.21 sizes it like any MLA model: Hopper's scaled rows, no replication
    old = plan(flags, model="deepseek-v3.2", rules="sglang-0.5.21", gpu="H100",
               weights_gib=40)
    assert old.deployment.dsa_backend.value == "flashmla_sparse"
    assert old.capacity.token_bytes == 61 * (656 + 132) + (656 + 132) == 48_856


def test_dsa_under_dcp_0_5_21_keeps_the_pooled_index():
    """0.5.21 has no kpool refusal: GLM-5.3-Flash's kpool-4 index keys size as without DCP
    (recording 0.5.21|glm-5.3-flash|B200|fp8_e4m3|tp=8|dp=1|spec=0|radix=on|dcp2:
    cell 7,084 B)."""
    p = plan(["--tp", "8", "--dcp-size", "2", "--kv-cache-dtype", "fp8_e4m3"],
             model="glm-5.3-flash", rules="sglang-0.5.21", gpu="B200")
    assert p.capacity.token_bytes == 7_084
    assert p.capacity.token_bytes == plan(["--tp", "8", "--kv-cache-dtype", "fp8_e4m3"],
                                          model="glm-5.3-flash", rules="sglang-0.5.21",
                                          gpu="B200").capacity.token_bytes


def test_speculation_under_dcp_charges_the_draft_once_and_notes_its_replicas():
    """The EAGLE budget of a non-DSA model charges the draft layer as without DCP (recording
    0.5.23|deepseek-v3|H200|fp8_e4m3|tp=4|dp=1|spec=4|radix=on|dcp2: cell 35,712 B =
    62 × 576); the draft worker's pools span T × dcp (`loc_space_scale`), which a note says."""
    flags = ["--tp", "4", "--dcp-size", "2", "--kv-cache-dtype", "fp8_e4m3", *EAGLE]
    p = plan(flags, model="deepseek-v3", rules="sglang-0.5.23", gpu="H200", weights_gib=80)
    assert p.capacity.token_bytes == 62 * 576 == 35_712
    assert any("draft worker's pools span the T × 2 logical slots" in n for n in p.notes)
