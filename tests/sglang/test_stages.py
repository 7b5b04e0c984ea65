"""Pipeline parallelism: kvledger.sglang.stagelayers and kvledger.sglang.stages.

Engine source followed (sglang 0.5.21 and 0.5.23 release wheels, python/sglang/srt/):
distributed/utils.py `get_pp_indices`; arg_groups/overrides.py
`_pipeline_parallel_overlap_disable`; arg_groups/validation_hook.py
`check_pipeline_parallel_compat`; mem_cache/kv_cache_configurator.py `_handle_max_mamba_cache`
(the largest stage's share) and `_apply_token_constraints` (MIN over stages).
"""

from __future__ import annotations

import pytest

from kvledger.core.errors import DeploymentError
from kvledger.sglang.launch import parse_flags
from kvledger.sglang.plan import make_plan
from kvledger.sglang.stagelayers import pp_indices

REST = 107_269_324_800  # GLM-5.3-Flash: 100 GiB − the 100 MiB multimodal reservation
GLM_SLOT = 147_619_840  # 34 linear layers × 4,341,760 B
FP8 = ["--kv-cache-dtype", "fp8_e4m3"]


def plan(flags, model="glm-5.3-flash", **kw):
    return make_plan(model, parse_flags(flags).deployment, **kw)


@pytest.mark.parametrize(("layers", "pp", "expected"), [
    (10, 3, [(0, 3), (3, 6), (6, 10)]),  # the last `remainder` stages take one more
    (45, 4, [(0, 11), (11, 22), (22, 33), (33, 45)]),
    (61, 4, [(0, 15), (15, 30), (30, 45), (45, 61)]),
    (48, 2, [(0, 24), (24, 48)]),
])
def test_pp_indices(layers, pp, expected):
    assert [pp_indices(layers, r, pp) for r in range(pp)] == expected


def test_pp_turns_overlap_off_so_extra_buffer_reserves_four_slots():
    agg, pp = plan(FP8), plan(FP8 + ["--pp-size", "2"])
    assert (agg.layout.slots_per_request, pp.layout.slots_per_request) == (5, 4)
    assert pp.deployment.disable_overlap_schedule


def test_glm_four_stages():
    pipe = plan(FP8 + ["--pp-size", "4"]).pipeline
    assert [(s.num_full_layers, s.num_linear_layers) for s in pipe.stages] == [
        (2, 9), (3, 8), (3, 8), (3, 9)]
    # int(S_all · 9 / 34): every stage is charged the largest stage's 9 linear layers
    assert pipe.charged_slot_bytes == int(GLM_SLOT * (9 / 34)) == 39_075_840
    k = int(REST * 0.9 / 1.9 // pipe.charged_slot_bytes) - 1
    assert {s.capacity.state_slots for s in pipe.stages} == {k} == {1_299}
    rest_tokens = REST - (k + 1) * pipe.charged_slot_bytes
    # per token: 660 B (528 latent + 132 index key) per full layer of the stage
    alone = [rest_tokens // (660 * full) // 64 * 64 for full in (2, 3, 3, 3)]
    assert [s.alone_tokens for s in pipe.stages] == alone == [42_780_800] + [28_520_512] * 3
    assert pipe.tokens == min(alone) and pipe.binding_stage == 1
    assert {s.capacity.max_total_tokens for s in pipe.stages} == {28_520_512}
    assert {s.capacity.max_running_requests for s in pipe.stages} == {1_299 // 4}
    # a stage of 8 linear layers allocates its own 8, charged for 9: one layer over, K + 1 times
    light = pipe.stages[1]
    assert light.own_slot_bytes == 8 * 4_341_760
    assert light.over_reserved_state_bytes == 1_300 * 4_341_760 == 5_644_288_000
    assert pipe.stages[0].over_reserved_state_bytes == 0


def test_qwen3_next_two_stages_halve_the_bytes():
    one, two = plan(["--tp", "2"], model="qwen3-next-80b-a3b-instruct"), plan(
        ["--tp", "2", "--pp-size", "2"], model="qwen3-next-80b-a3b-instruct")
    assert two.capacity.slot_bytes * 2 == one.capacity.slot_bytes == 38_633_472
    assert two.capacity.token_bytes * 2 == one.capacity.token_bytes == 12_288
    assert (two.capacity.state_slots, two.capacity.max_total_tokens,
            two.capacity.max_running_requests) == (2_632, 9_198_114, 658)
    assert (two.totals.ranks, two.totals.workers) == (4, 1)


def test_plan_shows_the_stages():
    p = plan(FP8 + ["--pp-size", "4"])
    doc = p.to_json()
    assert doc["deployment"]["pp_size"] == 4
    assert [s["tag"] for s in doc["pipeline"]["stages"]] == ["PP0", "PP1", "PP2", "PP3"]
    assert doc["pipeline"]["binding_stage"] == 1
    assert doc["totals"]["ranks"] == 4
    assert doc["totals"]["token_pool_bytes"] == sum(
        s["token_pool_bytes"] for s in doc["pipeline"]["stages"])
    assert plan(FP8).to_json()["pipeline"] is None


@pytest.mark.parametrize(("flags", "message"), [
    (["--pp-size", "2", "--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3",
      "--speculative-eagle-topk", "1"], "only supported on prefill nodes"),
    (["--pp-size", "2", "--disaggregation-mode", "decode", "--speculative-algorithm", "NEXTN",
      "--speculative-num-steps", "1", "--speculative-eagle-topk", "1"],
     "only supported on prefill nodes"),
    (["--pp-size", "2", "--disaggregation-mode", "prefill", "--speculative-algorithm", "EAGLE3",
      "--speculative-num-steps", "1", "--speculative-eagle-topk", "1"], "only supports EAGLE"),
    (["--pp-size", "2", "--tp", "2", "--attn-cp-size", "2"], "not supported with context"),
    (["--pp-size", "45"], "none of them full attention"),
    (["--pp-size", "46"], "only 45 decoder layers"),
])
def test_pp_refusals(flags, message):
    with pytest.raises(DeploymentError, match=message):
        plan(FP8 + flags)


def test_pp_with_mtp_on_a_prefill_node():
    p = plan(FP8 + ["--pp-size", "2", "--disaggregation-mode", "prefill",
                    "--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3",
                    "--speculative-eagle-topk", "1"])
    assert p.capacity.role.allocated_verify_rows == 0  # charged under 0.5.21, never allocated
    assert p.capacity.role.unbudgeted_verify_bytes == -p.capacity.verify_bytes


def test_device_pools_ledger_holds_the_stage_s_own_slots():
    p = plan(FP8 + ["--pp-size", "4"])  # per-rank plan: PP1, 8 linear layers
    state = next(r for r in p.pools.rows if r.component == "state pool")
    assert (state.count, state.unit_bytes) == (1_300, 8 * 4_341_760)
