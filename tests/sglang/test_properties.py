"""Properties of ledgers and capacity that must hold for any deployment (Hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from factories import glm_layout
from kvledger.core.units import GiB
from kvledger.sglang.capacity import CapacityError, Limit, MemoryInput, plan_capacity
from kvledger.sglang.deploy import DsaBackend, KVDtype, StateDtype
from kvledger.sglang.ledger import state_ledger, token_ledger

attn_tps = st.sampled_from([1, 2, 4, 8])
rules = st.sampled_from(["sglang-0.5.21", "sglang-0.5.23"])


@given(attn_tps, attn_tps, st.sampled_from(list(StateDtype)))
def test_state_bytes_never_grow_with_attn_tp(a, b, ssm):
    small, large = sorted((a, b))
    per_rank = {tp: state_ledger(glm_layout(tp_size=tp, mamba_ssm_dtype=ssm)).total_bytes
                for tp in (small, large)}
    assert per_rank[large] <= per_rank[small]


@given(rules, st.sampled_from(list(DsaBackend)))
def test_fp8_never_exceeds_bf16(rule, backend):
    fp8 = token_ledger(glm_layout(rule, dsa_backend=backend)).total_bytes
    bf16 = token_ledger(glm_layout(rule, kv_cache_dtype=KVDtype.BF16, dsa_backend=backend))
    assert fp8 <= bf16.total_bytes


@settings(max_examples=60, deadline=None)
@given(
    rules,
    st.integers(min_value=20, max_value=400),  # GiB available
    st.floats(min_value=0.1, max_value=4.0),  # mamba_full_memory_ratio
    st.booleans(),
    st.sampled_from([None, 16, 256, 4096]),
)
def test_capacity_invariants(rule, gib, ratio, overlap_off, running):
    lay = glm_layout(rule, mamba_full_memory_ratio=ratio, disable_overlap_schedule=overlap_off,
                     max_running_requests=running)
    plan = plan_capacity(lay, MemoryInput.available(gib * GiB))
    assert plan.max_total_tokens % lay.page_tokens == 0
    assert plan.max_running_requests <= plan.state_slots // lay.slots_per_request
    assert plan.max_running_requests == plan.limits[plan.binding]
    # KVCacheConfigurator.resolve_max_num_reqs caps N at T // 2, set limit or not.
    assert plan.limits[Limit.TOKENS] == plan.max_total_tokens // 2
    assert plan.state_pool_bytes + plan.max_total_tokens * plan.token_bytes <= plan.rest_bytes
    assert plan.unused_bytes >= 0


dp_layouts = st.sampled_from([(1, 1, False), (4, 1, False), (8, 8, True), (8, 4, True),
                              (8, 2, True), (4, 2, False), (1, 8, False)])


@settings(max_examples=40, deadline=None)
@given(rules, dp_layouts, st.integers(min_value=40, max_value=400), st.booleans())
def test_totals_are_per_rank_times_ranks(rule, layout, gib, radix_off):
    tp, dp, dp_attention = layout
    lay = glm_layout(rule, tp_size=tp, dp_size=dp, enable_dp_attention=dp_attention,
                     disable_radix_cache=radix_off, max_running_requests=64)
    plan = plan_capacity(lay, MemoryInput.available(gib * GiB))
    tot = plan.totals
    # Without DP attention, --dp-size runs replicas of the whole tp group
    # (DataParallelController.launch_dp_schedulers): dp × tp GPUs, dp schedulers.
    workers = dp
    gpus = tp if dp_attention else tp * dp
    assert (tot.ranks, tot.workers) == (gpus, workers)
    assert tot.running_requests == plan.max_running_requests * workers
    assert tot.tokens == plan.max_total_tokens * workers
    assert tot.token_pool_bytes == plan.token_pool_bytes * gpus
    assert tot.state_pool_bytes == plan.state_pool_bytes * gpus
    assert tot.verify_bytes == plan.verify_bytes * gpus


@settings(max_examples=60, deadline=None)
@given(rules, st.integers(min_value=60, max_value=400), st.integers(min_value=1, max_value=16),
       st.sampled_from([1, 8, 48, 512]), st.sampled_from([None, 200]), st.booleans())
def test_speculation_never_increases_state_slots(rule, gib, draft, running, mamba, radix_off):
    # _handle_max_mamba_cache: the joint solve K = (B − S(1+D)) / (S(1 + D/ratio)) is at most
    # B/S − 1; the other two branches do not depend on D. (T may grow: the scratch reserved
    # for min(requests, K // ratio) can be smaller than the slots the joint solve gave up.)
    base = dict(max_running_requests=running, max_mamba_cache_size=mamba,
                disable_radix_cache=radix_off)
    memory = MemoryInput.available(gib * GiB)
    try:
        plain = plan_capacity(glm_layout(rule, **base), memory)
    except CapacityError:
        return  # too big without speculation already
    try:
        spec = plan_capacity(glm_layout(rule, speculative_num_draft_tokens=draft, **base), memory)
    except CapacityError:
        return  # the scratch left no room: refused, not a larger K
    assert spec.state_slots <= plain.state_slots
    assert spec.verify_bytes + spec.state_pool_bytes + spec.max_total_tokens * spec.token_bytes \
        <= spec.rest_bytes
