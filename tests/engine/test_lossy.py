"""The 8-bit checkpoint what-if's quantizers and its measured logit error (`engine.lossy`).

The reference engine is seeded and runs fixed-order arithmetic on CPU, so each difference is
deterministic; the bounds below would fail if a checkpoint were not quantized (difference 0,
no token changed) and if the quantizer were much coarser than 8 bits."""

from __future__ import annotations

import pytest
import torch

from kvledger.cache.policies import StateAdmission, StateEviction
from kvledger.cache.policies.lossy_states import LossyCheckpoints
from kvledger.engine.lossy import fake_fp8, fake_int8, lossy_difference


def test_fake_int8_one_absmax_scale_per_row_and_idempotent():
    x = torch.tensor([[1.0, -0.5, 0.004], [0.0, 0.0, 0.0]])
    y = fake_int8(x)
    # row 0: scale 1/127; 0.5 → 63.5 → 64 (round half to even: 64) → 64/127; 0.004 → 0.508 → 1
    assert y[0].tolist() == pytest.approx([1.0, -64 / 127, 1 / 127], abs=1e-7)
    assert y[1].tolist() == [0.0, 0.0, 0.0]
    assert torch.equal(fake_int8(y), y)


def test_fake_fp8_maps_the_row_absmax_to_448():
    x = torch.tensor([[448.0, -1.0, 0.3, 200.0], [0.0, 0.0, 0.0, 0.0]])
    y = fake_fp8(x)
    # scale 1: e4m3 keeps 3 mantissa bits. 0.3 → 0.3125 (2^-2 · 1.25); 200 → 192 (2^7 · 1.5;
    # 208 = 2^7 · 1.625 is further); 448 and −1 are exact.
    assert y[0].tolist() == [448.0, -1.0, 0.3125, 192.0]
    assert y[1].tolist() == [0.0, 0.0, 0.0, 0.0]
    # the scale follows the row: ×1/64 throughout gives the same values ×1/64
    assert torch.equal(fake_fp8(x / 64), y / 64)
    assert fake_fp8(x.to(torch.bfloat16)).dtype is torch.bfloat16


@pytest.mark.parametrize(("name", "kind", "diff", "requests", "tokens"), [
    # int8: about 0.04 on shared-system, no token changes; fp8's 3-bit mantissa costs 100×
    ("shared-system", LossyCheckpoints.INT8, 0.0431, 0, 0),
    ("shared-system", LossyCheckpoints.FP8, 4.699, 2, 5),
    ("tiny-pools", LossyCheckpoints.INT8, 0.1626, 0, 0),
    ("tiny-pools", LossyCheckpoints.FP8, 0.4575, 0, 0),
])
def test_logit_difference_per_workload(name, kind, diff, requests, tokens):
    d = lossy_difference(name, kind)
    assert d.kind is kind and d.cached_prompt_tokens > 0
    assert 0 < d.max_logit_difference == pytest.approx(diff, abs=1e-3)
    assert (d.changed_requests, d.changed_tokens) == (requests, tokens)


def test_branching_changes_tokens_and_policies_reach_the_cache():
    d = lossy_difference("branching", LossyCheckpoints.INT8)
    assert (d.requests, d.generated_tokens, d.cached_prompt_tokens) == (6, 24, 320)
    assert d.max_logit_difference == pytest.approx(4.799, abs=1e-3)
    assert (d.changed_requests, d.changed_tokens) == (3, 5)
    # ghost-branch admits other states: 288 prompt tokens cached instead of 320; the
    # largest error is on a request both policies serve from the same cached state
    g = lossy_difference("branching", LossyCheckpoints.INT8,
                         admission=StateAdmission.GHOST_BRANCH,
                         eviction=StateEviction.FLOP_AWARE)
    assert g.cached_prompt_tokens == 288
    assert g.max_logit_difference == pytest.approx(4.799, abs=1e-3)


def test_host_workloads_are_refused():
    with pytest.raises(ValueError, match="device states only"):
        lossy_difference("host-write-back")
    with pytest.raises(ValueError, match="expected one of"):
        lossy_difference("nope")
