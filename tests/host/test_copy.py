"""The interleaving copies move bytes, never numbers: NaN payloads and odd widths survive."""

from __future__ import annotations

import pytest
import torch

from kvledger.host.copy import deinterleave, interleave, rows, words


def _nan_patterns(shape: tuple[int, ...]) -> torch.Tensor:
    """Random bytes, with signalling and quiet NaNs of both widths planted at the start."""
    data = torch.randint(0, 256, shape, dtype=torch.uint8)
    flat = data.view(-1)
    planted = torch.tensor([0x7FF0000000000001, 0x7FF8DEADBEEF0001], dtype=torch.int64)
    flat[:16] = planted.view(torch.uint8)
    flat[16:24] = torch.tensor([0x7F800001, 0xFFC00001 - (1 << 32)], dtype=torch.int32).view(torch.uint8)
    return data


@pytest.mark.parametrize("row_bytes", [528, 132, 66, 33])  # float64, float32, float16, bytes
def test_interleave_round_trip_is_bitwise(row_bytes):
    parts = [_nan_patterns((3, 4, row_bytes)) for _ in range(5)]
    block = torch.zeros((3, 4, 5, row_bytes), dtype=torch.uint8)
    interleave([words(part) for part in parts], words(block), dim=2)
    for i, part in enumerate(parts):
        assert torch.equal(block[:, :, i], part)
    outs = [torch.zeros_like(part) for part in parts]
    deinterleave(rows(block), 2, [rows(out) for out in outs])
    assert all(torch.equal(out, part) for out, part in zip(outs, parts, strict=True))


def test_words_picks_the_widest_dividing_float():
    assert words(torch.zeros((2, 528), dtype=torch.uint8)).dtype == torch.float64
    assert words(torch.zeros((2, 132), dtype=torch.uint8)).dtype == torch.float32
    assert words(torch.zeros((2, 33), dtype=torch.uint8)).dtype == torch.uint8
