"""fp8 e4m3 round trips stay within the format's bound; raw saturates at ±448."""

from __future__ import annotations

import pytest
import torch

from kvledger.pools.fp8 import (
    FP8_ABS_ERROR,
    FP8_MAX,
    FP8_REL_ERROR,
    dequantize_raw,
    dequantize_scaled,
    quantize_raw,
    quantize_scaled,
)


def _latent(seed: int, rows: int = 64, width: int = 512) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    # Magnitudes spread over 1e-4..1e3 so groups exercise normal and subnormal codes.
    x = torch.randn(rows, width, generator=g) * 10 ** torch.empty(rows, 1).uniform_(-4, 3, generator=g)
    x[0, :128] = 0  # an all-zero group
    return x.to(torch.bfloat16)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scaled_round_trip_within_the_e4m3_bound(seed):
    x = _latent(seed)
    codes, scale = quantize_scaled(x)
    assert codes.dtype == torch.uint8 and codes.shape == x.shape
    assert scale.dtype == torch.float32 and scale.shape == (64, 4)
    back = dequantize_scaled(codes, scale)
    xf = x.float()
    per_elem_scale = scale.repeat_interleave(128, dim=1)
    bound = xf.abs() * FP8_REL_ERROR + per_elem_scale * FP8_ABS_ERROR
    assert ((back - xf).abs() <= bound * (1 + 1e-6)).all()
    assert (back[0, :128] == 0).all() and scale[0, 0] == 0  # zeros stay zeros, finite


def test_scale_is_group_amax_over_448():
    # SGLang quant_k_cache.py: scale = abs(group).max() / 448, one float32 per 128.
    x = torch.zeros(1, 256)
    x[0, 5], x[0, 200] = -896.0, 44.8
    _, scale = quantize_scaled(x)
    assert scale.tolist() == [[2.0, pytest.approx(0.1)]]


def test_raw_round_trip_within_bound_and_saturation():
    x = torch.linspace(-448, 448, 4097)
    back = dequantize_raw(quantize_raw(x))
    assert ((back - x).abs() <= x.abs() * FP8_REL_ERROR + FP8_ABS_ERROR).all()
    big = dequantize_raw(quantize_raw(torch.tensor([1e4, -1e4])))
    assert big.tolist() == [FP8_MAX, -FP8_MAX]


def test_scaled_needs_whole_groups():
    with pytest.raises(ValueError, match="multiple of 128"):
        quantize_scaled(torch.zeros(1, 100))
