"""Decode context parallelism: kvledger.sglang.dcp and its effect on the plan.

Engine source followed (sglang 0.5.21 and 0.5.23 release wheels, python/sglang/srt/):
configs/model_config.py `get_num_kv_heads` (heads over tp // dcp groups);
distributed/parallel_state.py `initialize_model_parallel` (dcp divides tp);
mem_cache/kv_cache_configurator.py `_build_token_to_kv_pool_allocator` (T · dcp logical slots,
pages of page · dcp) and `resolve_max_num_reqs` (the physical T);
arg_groups/model_overrides/deepseek_v2.py (0.5.23: the pooled index refusal).
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
    (["--tp", "8", "--dcp-size", "8"], "glm-5.3-flash", "sglang-0.5.21", "for DSA models"),
    (["--tp", "8", "--dcp-size", "8"], "deepseek-v3.2", "sglang-0.5.23", "for DSA models"),
    (["--tp", "8", "--dp", "8", "--enable-dp-attention", "--dcp-size", "2"], QWEN,
     "sglang-0.5.21", "inside one attention-TP group"),
    (["--tp", "8", "--dcp-size", "2", "--enable-hierarchical-cache"], QWEN, "sglang-0.5.21",
     "only supported for MLA models"),
    (["--tp", "8", "--dcp-size", "2", "--speculative-algorithm", "NGRAM",
      "--speculative-num-draft-tokens", "4"], "llama-3.1-8b", "sglang-0.5.21", "draft pools"),
])
def test_dcp_refusals(flags, model, rules, message):
    with pytest.raises(DeploymentError, match=message):
        plan(flags, model=model, rules=rules)


def test_dcp_in_json():
    doc = plan(["--tp", "8", "--dcp-size", "4"]).to_json()
    assert doc["deployment"]["dcp_size"] == 4
    assert doc["deployment"]["allocation_page_tokens"] == 4 * doc["deployment"]["page_tokens"]
    assert doc["capacity"]["logical_tokens"] == 4 * doc["capacity"]["max_total_tokens"]
