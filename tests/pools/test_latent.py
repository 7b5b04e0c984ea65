"""Latent rows: bf16, raw fp8 and scaled fp8 (SGLang's DSA layout), batched set/get."""

from __future__ import annotations

import pytest
import torch

from kvledger.pools.fp8 import FP8_ABS_ERROR, FP8_REL_ERROR
from kvledger.pools.latent import LatentKVPool
from kvledger.sglang.specs import LatentRowSpec, RowLayout


def pool(layout: RowLayout, rope: int = 0, slots: int = 64, layers: int = 2) -> LatentKVPool:
    spec = LatentRowSpec(kv_lora_rank=512, qk_rope_head_dim=rope, layout=layout)
    return LatentKVPool(spec=spec, num_layers=layers, num_token_slots=slots, device="cpu")


def unit_scale_latent(n: int, rope: int, seed: int = 0) -> torch.Tensor:
    """Rows whose every 128-group has amax exactly 448: the scale is 1."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 512 + rope, generator=g).clamp(-100, 100)
    x[:, 0:512:128] = 448.0
    return x.to(torch.bfloat16)


@pytest.mark.parametrize(("rope", "row_bytes"), [(0, 528), (64, 656)])
def test_scaled_row_is_codes_then_scales_then_bf16_rope(rope, row_bytes):
    # SGLang nsa/quant_k_cache.py: [512 fp8 | 4 float32 scales | rope bf16]; 528 B for
    # GLM-5.3-Flash (NoPE), 656 B for DeepSeek-V3.2 (rope 64).
    scaled, raw = pool(RowLayout.FP8_SCALED, rope), pool(RowLayout.FP8_RAW, rope)
    x = unit_scale_latent(5, rope)
    s_rows, r_rows = scaled.encode(x), raw.encode(x)
    assert s_rows.shape == (5, row_bytes) and r_rows.shape == (5, 512 + rope)
    # With a unit scale the fp8 codes of the latent are the same bytes in both layouts.
    assert torch.equal(s_rows[:, :512], r_rows[:, :512])
    assert torch.equal(s_rows[:, 512:528].contiguous().view(torch.float32), torch.ones(5, 4))
    # The RoPE part: bf16 bytes in the scaled row, fp8 codes in the raw row.
    assert torch.equal(s_rows[:, 528:].contiguous().view(torch.bfloat16), x[:, 512:])
    if rope:
        assert not torch.equal(r_rows[:, 512:], s_rows[:, 528:528 + rope])


@pytest.mark.parametrize("layout", list(RowLayout))
def test_set_get_round_trip(layout):
    p = pool(layout, rope=64)
    x = unit_scale_latent(6, 64, seed=3) / 7
    locs = torch.tensor([63, 1, 17, 2, 40, 9])
    p.set_rows(1, locs, x)
    back = p.get_rows(1, locs)
    assert back.dtype == torch.float32 and back.shape == (6, 576)
    if layout is RowLayout.BF16:
        assert torch.equal(back, x.float())
    else:
        assert ((back - x.float()).abs() <= x.float().abs() * FP8_REL_ERROR * 1.0001
                + 4 * FP8_ABS_ERROR).all()
    assert (p.kv_buffer[0] == 0).all()  # the other layer is untouched
    untouched = torch.ones(64, dtype=torch.bool)
    untouched[locs] = False
    assert (p.kv_buffer[1][untouched] == 0).all()


def test_misuse_raises():
    p = pool(RowLayout.FP8_SCALED)
    x = torch.zeros(2, 512)
    with pytest.raises(IndexError, match="token slot 64 out of range 0..63"):
        p.set_rows(0, [1, 64], x)
    with pytest.raises(IndexError, match="token slot -1"):
        p.get_rows(0, [-1])
    with pytest.raises(IndexError, match="full layer 2"):
        p.get_rows(2, [0])
    with pytest.raises(ValueError, match=r"shape \(2, 512\)"):
        p.set_rows(0, [1, 2], torch.zeros(2, 576))
    with pytest.raises(TypeError, match="integers"):
        p.get_rows(0, torch.tensor([1.0]))
    with pytest.raises(TypeError, match="integers"):  # a mask would read slots 0 and 1
        p.get_rows(0, torch.tensor([True, False]))
