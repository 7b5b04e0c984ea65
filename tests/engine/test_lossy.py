"""The 8-bit checkpoint what-if's quantizer (`engine.lossy`); the run itself is its doctest."""

from __future__ import annotations

import pytest
import torch

from kvledger.engine.lossy import fake_int8, lossy_difference


def test_fake_int8_one_absmax_scale_per_row_and_idempotent():
    x = torch.tensor([[1.0, -0.5, 0.004], [0.0, 0.0, 0.0]])
    y = fake_int8(x)
    # row 0: scale 1/127; 0.5 → 63.5 → 64 (round half to even: 64) → 64/127; 0.004 → 0.508 → 1
    assert y[0].tolist() == pytest.approx([1.0, -64 / 127, 1 / 127], abs=1e-7)
    assert y[1].tolist() == [0.0, 0.0, 0.0]
    assert torch.equal(fake_int8(y), y)


def test_host_workloads_are_refused():
    with pytest.raises(ValueError, match="device states only"):
        lossy_difference("host-write-back")
    with pytest.raises(ValueError, match="expected one of"):
        lossy_difference("nope")
