"""--hicache-state-share (kvledger.sglang.hicache_share): kvledger's what-if split of the host budget.

Device sizes are the SPEC §5 plan's (T = 7,780,672 tokens, K = 343 state slots, scaled fp8):
ratio 2 gives SGLang's pools int(T·2) = 15,561,344 tokens and int(K·2) = 686 slots, a budget
of 15,561,344 · 7,260 + 686 · 147,619,840 = 214,242,567,680 B in our view (7,260 B a token).
SGLang has no such flag (`build_hybrid_mamba_stack` passes one hicache_ratio to both pools);
these numbers are the module's formula, not an engine's.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kvledger.cli.app import app
from kvledger.pools.build import ScaleDown
from kvledger.sglang.deploy import Deployment, KVDtype
from kvledger.sglang.hicache_share import StateShare, check_share
from kvledger.sglang.plan import make_plan
from kvledger.sglang.scaling import scale_plan

SLOT_BYTES = 147_619_840
BUDGET = 15_561_344 * 7_260 + 686 * SLOT_BYTES


def plan(share=None, **deploy):
    deploy.setdefault("kv_cache_dtype", KVDtype.FP8_E4M3)
    return make_plan("glm-5.3-flash", Deployment(enable_hierarchical_cache=True, **deploy),
                     host_state_share=share)


def sizes(p):
    ours = p.host.views[1]
    return ours.host_tokens, ours.host_state_slots


def test_no_share_is_sglangs_sizing_exactly():
    default = plan()
    assert sizes(default) == (15_561_408, 687)
    assert default.host.state_share is None
    assert not any("--hicache-state-share" in n for n in default.host.notes)


@pytest.mark.parametrize(("share", "slots", "tokens"), [
    (0.25, 362, 22_149_336),  # fewer states, more KV
    (0.7, 1015, 8_871_684),  # more states, less KV
])
def test_ratio_budget_is_split_anew(share, slots, tokens):
    assert BUDGET == 214_242_567_680
    p = plan(share)
    # the pools round like SGLang's: one page and one slot more
    assert sizes(p) == ((tokens // 64 + 1) * 64, slots + 1)
    ours = p.host.views[1]
    # the total stays the ratio's budget, up to that rounding
    assert 0 <= ours.pools.total_bytes - BUDGET < 64 * 7_260 + SLOT_BYTES + 7_260
    assert p.host.state_share == share
    assert any(n.startswith("kvledger: --hicache-state-share") and "not an SGLang flag" in n
               for n in p.host.notes)


def test_size_budget_is_split_by_the_share_not_by_device_bytes():
    # 100 GB: half to states = 338 slots; the rest 6,901,445 tokens
    p = plan(0.5, hicache_size_gb=100)
    assert sizes(p) == ((6_901_445 // 64 + 1) * 64, 339)
    assert sizes(plan(hicache_size_gb=100)) != sizes(p)


def test_scaled_down_plans_keep_the_share():
    p = scale_plan(plan(0.7), ScaleDown(max_total_tokens=4096, max_mamba_cache_size=8))
    assert p.host.state_share == 0.7
    # the scaled budget: int(4096·2) tokens and int(8·2) slots = 2,421,391,360 B; 0.7 of it
    # is 11 slots (+1), far fewer than ratio 2's 17: states were 97.5 % of it
    budget = 8192 * 7_260 + 16 * SLOT_BYTES
    assert (p.capacity.max_total_tokens, p.capacity.state_slots) == (4096, 8)
    assert budget == 2_421_391_360
    assert p.host.views[1].host_state_slots == int(budget * 0.7 // SLOT_BYTES) + 1 == 12


@pytest.mark.parametrize("bad", [0, 1, 0.0, 1.0, -0.5, 1.5, float("nan"), float("inf"), True,
                                 "0.5", None])
def test_share_outside_zero_one_is_refused_naming_the_flag(bad):
    with pytest.raises(ValueError, match=r"--hicache-state-share .*: expected a fraction "
                                         "strictly between 0 and 1"):
        check_share(bad)


def test_errors_name_the_flag():
    with pytest.raises(ValueError, match="--hicache-state-share 0.5: has no effect without "
                                         "--enable-hierarchical-cache"):
        make_plan("glm-5.3-flash", Deployment(kv_cache_dtype=KVDtype.FP8_E4M3),
                  host_state_share=0.5)
    with pytest.raises(ValueError, match="--hicache-state-share 0.001: 0.001 of the host budget "
                                         r"\(.*\) holds no state slot"):
        plan(0.001, hicache_size_gb=1)
    with pytest.raises(ValueError, match="--hicache-state-share 0.999999999: leaves .* for KV, "
                                         "less than one 64-token page"):
        StateShare(0.999999999).split(SLOT_BYTES * 10 + 100, token_bytes=7_260, slot_bytes=SLOT_BYTES,
                                    page_tokens=64)
    with pytest.raises(ValueError, match="--hicache-state-share 0.5: .* has no linear-attention "
                                         "state; its whole host budget is KV"):
        make_plan("llama-3.1-8b", Deployment(enable_hierarchical_cache=True),
                  host_state_share=0.5)


def test_cli_plan_json_carries_the_share_and_vllm_refuses_it():
    runner = CliRunner()
    out = runner.invoke(app, ["plan", "--kv-cache-dtype", "fp8_e4m3", "--enable-hierarchical-cache",
                              "--hicache-state-share", "0.7", "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert doc["host"]["state_share"] == 0.7
    assert doc["host"]["views"][1]["host_state_slots"] == 1016
    bad = runner.invoke(app, ["plan", "--engine", "vllm", "--hicache-state-share", "0.7"])
    assert bad.exit_code == 2 and "not with --engine vllm" in bad.output
