"""build_pools allocates exactly what the plan's ledgers say, for every config and rule set."""

from __future__ import annotations

import pytest
import torch

from factories import REFUSED_BY_SGLANG, SHARED_CONFIGS
from kvledger.pools.accounting import account
from kvledger.pools.build import ScaleDown, build_pools
from kvledger.sglang.deploy import Deployment, DeploymentError, KVDtype
from kvledger.sglang.launch import parse_flags
from kvledger.sglang.plan import make_plan
from kvledger.sglang.rules import RULES
from kvledger.sglang.scaling import scale_plan

CONFIGS = sorted(p for p in SHARED_CONFIGS.glob("*.json"))


def _auto_no_buffer_refuses(config, rules) -> bool:
    """0.5.8/0.5.9's `auto` strategy is always no_buffer (server_args.py
    `_handle_missing_default_values`), which a paged DSA hybrid (GLM-5.3-Flash) cannot use:
    the plan refuses, naming the strategy, and there are no pools to build."""
    from kvledger.model.arch import AttnKind
    from kvledger.model.config import load_model
    arch = load_model(str(config))
    if RULES[rules].auto_strategy_extra_buffer or not (arch.is_hybrid
                                                        and arch.attn is AttnKind.DSA):
        return False
    with pytest.raises(DeploymentError, match="no_buffer: needs page size 1"):
        make_plan(str(config), rules=rules)
    return True


def test_shared_configs_are_found():
    assert len(CONFIGS) >= 11


@pytest.mark.parametrize("rules", list(RULES))
@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.stem)
def test_full_size_allocation_equals_ledger_bytes(config, rules):
    if config.stem in REFUSED_BY_SGLANG:  # a clean clone tests the embedded configs too
        with pytest.raises(DeploymentError, match=REFUSED_BY_SGLANG[config.stem]):
            make_plan(str(config), rules=rules)
        return
    if _auto_no_buffer_refuses(config, rules):
        return
    plan = make_plan(str(config), rules=rules)
    pools = build_pools(plan, "meta")  # full-size shapes, no memory
    pools.check_integrity()
    rows = account(pools)
    assert all(r.matches for r in rows), [r for r in rows if not r.matches]
    cap = plan.capacity
    by_name = {r.pool: r.allocated_bytes for r in rows}
    token = sum(v for k, v in by_name.items() if k.startswith(("full ", "draft ")))
    state = by_name.get("conv state", 0) + by_name.get("temporal state", 0)
    side = by_name.get("compress tail", 0) + by_name["req_to_token"]
    # Cross-check against the capacity plan's own totals (a second derivation).
    assert token == cap.token_pool_bytes
    assert state == cap.state_pool_bytes
    assert side == cap.side.total_bytes


def test_glm_article_deployment_byte_for_byte():
    # SPEC §2–5 at full size: T = 7,780,672, P = 64, K = 343, N = 68, 11 DSA + 34 KDA layers.
    plan = make_plan(kv_cache_dtype="fp8_e4m3")
    rows = {r.pool: r for r in account(build_pools(plan, "meta"))}
    slots = 7_780_672 + 64
    assert rows["full KV"].allocated_bytes == slots * 528 * 11  # 5,808 B/token
    assert rows["full index keys"].allocated_bytes == slots // 64 * 8_448 * 11  # 1,452 B/token
    assert rows["conv state"].allocated_bytes == 344 * 34 * 3 * 24_576 * 2
    assert rows["temporal state"].allocated_bytes == 344 * 34 * 64 * 128 * 128 * 4
    assert (rows["conv state"].allocated_bytes + rows["temporal state"].allocated_bytes
            == 344 * 147_619_840)
    assert rows["compress tail"].allocated_bytes == 70 * 4 * 128 * 2 * 2 * 11  # N + 2 rows
    assert rows["req_to_token"].allocated_bytes == 69 * (1_048_576 + 4) * 4


def test_glm_0_5_23_pages_hold_256_tokens_and_reserve_33_bytes():
    plan = make_plan(kv_cache_dtype="fp8_e4m3", rules="sglang-0.5.23")
    pools = build_pools(plan, "meta")
    keys = pools.kv.full_kv_pool.index_keys
    slots = plan.capacity.max_total_tokens + 256
    assert keys.buffers[0].shape == (slots // 256, 8_448)
    assert keys.allocated_bytes == slots * 33 * 11  # 363 B/token (SPEC §2)


def test_draft_layers_get_their_own_pool():
    dep = parse_flags(["--kv-cache-dtype", "fp8_e4m3", "--speculative-algorithm", "EAGLE",
                       "--speculative-num-steps", "1", "--speculative-eagle-topk", "1",
                       "--speculative-num-draft-tokens", "2"]).deployment
    plan = make_plan(deployment=dep)
    pools = build_pools(plan, "meta")
    draft = pools.draft_kv_pool
    assert draft is not None and draft.num_layers == 1
    rows = {r.pool: r for r in account(pools)}
    assert rows["draft KV"].matches and rows["draft index keys"].matches
    assert pools.kv.full_kv_pool.tail.spec.width_tokens == 4 + 2  # kpool + draft tokens


def test_scale_down_is_a_real_plan():
    plan = make_plan(kv_cache_dtype="fp8_e4m3")
    small = scale_plan(plan, ScaleDown(max_total_tokens=1000, max_mamba_cache_size=10))
    cap = small.capacity
    assert (cap.max_total_tokens, cap.state_slots, cap.max_running_requests) == (960, 10, 2)
    assert small.ledgers == plan.ledgers and small.layout.model is plan.layout.model
    with pytest.raises(ValueError, match="--max-total-tokens 0"):
        scale_plan(plan, ScaleDown(max_total_tokens=0))


def test_laptop_scale_keeps_caps_the_user_gave():
    plan = make_plan(deployment=Deployment(kv_cache_dtype=KVDtype.FP8_E4M3, max_total_tokens=128))
    laptop = ScaleDown.laptop(plan)
    assert laptop.max_total_tokens is None and laptop.max_mamba_cache_size == 5
    small = scale_plan(plan, laptop)
    assert (small.capacity.max_total_tokens, small.capacity.state_slots) == (128, 5)


def test_cuda_without_a_gpu_is_a_clear_error():
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    with pytest.raises(ValueError, match="--device cuda: no CUDA device"):
        build_pools(make_plan(), "cuda")


def test_meta_build_of_an_unsharded_plan_keeps_layer_ids():
    plan = make_plan(kv_cache_dtype="fp8_e4m3")
    kv = build_pools(plan, "meta").kv
    assert list(kv.full_layer_to_dense) == list(range(3, 45, 4))
