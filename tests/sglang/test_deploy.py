"""Deployment: field validation and SGLang's cross-flag rules, each error naming its flag."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvledger.sglang.deploy import (
    FIELD_FLAGS,
    Deployment,
    DeploymentError,
    DsaBackend,
    KVDtype,
    MambaStrategy,
    SpecAlgorithm,
)


def test_defaults_are_a_valid_single_rank():
    d = Deployment()
    assert (d.attn_dp_size, d.attn_tp_size, d.speculative) == (1, 1, False)


@pytest.mark.parametrize(
    ("tp", "dp", "dp_attention", "cp", "attn_tp"),
    [
        # Article §3: "TP8/DP4/cp1 时 attn_tp=2，TP8 非 DP 时 attn_tp=8", and attn_tp=1 only when
        # attn_dp_size == tp_size and attn_cp_size = 1.
        (8, 4, True, 1, 2),
        (8, 1, False, 1, 8),
        (8, 8, True, 1, 1),
        (8, 8, False, 1, 8),  # plain DP: replicas, attention stays TP
        (8, 2, True, 2, 2),  # 8 / 2 / 2
    ],
)
def test_attn_tp_follows_the_article(tp, dp, dp_attention, cp, attn_tp):
    d = Deployment(tp_size=tp, dp_size=dp, enable_dp_attention=dp_attention, attn_cp_size=cp)
    assert d.attn_tp_size == attn_tp
    assert d.attn_tp_size * d.attn_dp_size * d.attn_cp_size == tp


ERRORS = [
    (dict(tp_size=0), "--tp-size 0: expected a positive integer"),
    (dict(dp_size=-2), "--dp-size -2: expected a positive integer"),
    (dict(attn_cp_size=1.5), "--attn-cp-size 1.5: expected a positive integer"),
    (dict(tp_size=True), "--tp-size True: expected a positive integer"),
    (dict(tp_size="8"), "--tp-size '8': expected a positive integer"),
    (dict(page_size=0), "--page-size 0: expected a positive integer"),
    (dict(max_total_tokens=0), "--max-total-tokens 0: expected a positive integer"),
    (dict(context_length=-1), "--context-length -1: expected a positive integer"),
    (dict(max_mamba_cache_size=0), "--max-mamba-cache-size 0: expected a positive integer"),
    (dict(kv_cache_dtype="fp8_e4m3"),
     "--kv-cache-dtype 'fp8_e4m3': expected a KVDtype member, one of auto, bf16, fp8_e4m3"),
    (dict(mamba_ssm_dtype="bfloat16"), "--mamba-ssm-dtype 'bfloat16': expected a StateDtype "
     "member, one of float32, bfloat16, float16"),
    (dict(enable_dp_attention=1), "--enable-dp-attention 1: expected True or False (a switch)"),
    (dict(speculative_num_draft_tokens=-1), "--speculative-num-draft-tokens -1: expected a "
     "non-negative integer (0 = speculative decoding off)"),
    (dict(mem_fraction_static=0), "--mem-fraction-static 0: expected a number in (0, 1]"),
    (dict(mem_fraction_static=1.01), "--mem-fraction-static 1.01: expected a number in (0, 1]"),
    (dict(mem_fraction_static=float("nan")),
     "--mem-fraction-static nan: expected a number in (0, 1]"),
    (dict(mamba_full_memory_ratio=0.0), "--mamba-full-memory-ratio 0.0: expected a positive "
     "number (state : token bytes)"),
    # parallel_hook.handle_data_parallelism asserts tp % dp == 0 under DP attention
    (dict(tp_size=8, dp_size=3, enable_dp_attention=True), "--dp-size 3: with "
     "--enable-dp-attention, --tp-size 8 must be a multiple of it (attn_tp = tp / dp / attn_cp)"),
    (dict(tp_size=4, dp_size=8, enable_dp_attention=True), "--dp-size 8: with "
     "--enable-dp-attention, --tp-size 4 must be a multiple of it (attn_tp = tp / dp / attn_cp)"),
    # parallel_hook.handle_context_parallelism: tp % (dp · attn_cp) == 0
    (dict(tp_size=8, attn_cp_size=3),
     "--attn-cp-size 3: --tp-size 8 must be a multiple of --dp-size × --attn-cp-size = 3"),
    (dict(tp_size=8, dp_size=4, attn_cp_size=4),
     "--attn-cp-size 4: --tp-size 8 must be a multiple of --dp-size × --attn-cp-size = 16"),
    (dict(tp_size=8, ep_size=3),
     "--ep-size 3: --tp-size 8 must be a multiple of it (moe_tp_size = tp / ep)"),
    (dict(tp_size=8, dp_size=8, enable_dp_attention=True, max_mamba_cache_size=7),
     "--max-mamba-cache-size 7: split over 8 attention-DP ranks this leaves 0 per rank; "
     "expected at least --dp-size"),
    (dict(speculative_algorithm=SpecAlgorithm.EAGLE),
     "--speculative-algorithm EAGLE: needs --speculative-num-draft-tokens ≥ 1"),
    (dict(hicache_ratio=2.0),
     "--hicache-ratio 2.0: has no effect without --enable-hierarchical-cache"),
    (dict(hicache_size_gb=100), "--hicache-size 100: has no effect without "
     "--enable-hierarchical-cache"),
    (dict(enable_hierarchical_cache=True, hicache_ratio=0.99), "--hicache-ratio 0.99: expected "
     "a number ≥ 1 (SGLang needs the host pool larger than the device pool)"),
    (dict(enable_hierarchical_cache=True, hicache_size_gb=0),
     "--hicache-size 0: expected a positive number of GB"),
    # kv_cache_hook.handle_cache_compatibility: mutually exclusive
    (dict(enable_hierarchical_cache=True, disable_radix_cache=True),
     "--enable-hierarchical-cache True: cannot be combined with --disable-radix-cache "
     "(HiCache extends the radix cache)"),
    # SPEC §5: "an explicit no_buffer with overlap on is rejected" (validate_mamba_no_buffer)
    (dict(mamba_strategy=MambaStrategy.NO_BUFFER), "--mamba-scheduler-strategy no_buffer: "
     "needs --disable-overlap-schedule (SGLang rejects no_buffer with overlap)"),
    (dict(mamba_strategy=MambaStrategy.NO_BUFFER, disable_overlap_schedule=True, page_size=64),
     "--mamba-scheduler-strategy no_buffer: needs page size 1, not --page-size 64"),
]


@pytest.mark.parametrize(("kwargs", "message"), ERRORS)
def test_each_invalid_deployment_names_its_flag(kwargs, message):
    with pytest.raises(DeploymentError) as caught:
        Deployment(**kwargs)
    assert str(caught.value) == message


def test_boundaries_that_are_valid():
    assert Deployment(mem_fraction_static=1.0).mem_fraction_static == 1.0
    # ratio 1 is the smallest host pool SGLang's HostKVCache accepts (rounded up a page)
    assert Deployment(enable_hierarchical_cache=True, hicache_ratio=1).hicache_ratio == 1
    assert Deployment(tp_size=8, dp_size=8, enable_dp_attention=True,
                      max_running_requests=8).max_running_requests == 8
    no_buffer = Deployment(mamba_strategy=MambaStrategy.NO_BUFFER, disable_overlap_schedule=True,
                           page_size=1)
    assert no_buffer.mamba_strategy is MambaStrategy.NO_BUFFER
    assert Deployment(speculative_num_draft_tokens=4).speculative


def test_every_field_has_a_flag():
    assert set(FIELD_FLAGS) == set(Deployment.__dataclass_fields__)
    assert all(flag.startswith("--") for flag in FIELD_FLAGS.values())


def test_dsa_backend_layout():
    # Article: "TRT-LLM 使用 raw layout，不带这份 scale"; every other backend is scaled on CUDA.
    assert [b for b in DsaBackend if not b.scaled_fp8] == [DsaBackend.TRTLLM]
    assert KVDtype.BF16.itemsize == 2 and KVDtype.FP8_E4M3.itemsize == 1


def _sglang_accepts(tp: int, dp: int, dp_attention: bool, cp: int) -> bool:
    # parallel_hook: tp % dp under DP attention; tp % (dp · cp) when cp > 1
    return (not dp_attention or tp % dp == 0) and (cp == 1 or tp % (dp * cp) == 0)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 64), st.integers(1, 16), st.booleans(), st.integers(1, 8))
def test_parallel_shapes_are_accepted_exactly_when_sglang_accepts_them(tp, dp, dp_att, cp):
    accepted = _sglang_accepts(tp, dp, dp_att, cp)
    try:
        d = Deployment(tp_size=tp, dp_size=dp, enable_dp_attention=dp_att, attn_cp_size=cp)
    except DeploymentError as exc:
        assert not accepted, exc
        assert str(exc).startswith(("--dp-size", "--attn-cp-size"))
        return
    assert accepted
    assert d.attn_tp_size * d.attn_dp_size * d.attn_cp_size == tp
