"""fp8 e4m3 storage: scaled (a float32 scale per 128 elements) and raw (no scale).

Scaled quantisation follows SGLang's DSA cache writer
(python/sglang/srt/layers/attention/nsa/quant_k_cache.py, `_quantize_k_cache_slow`):
per group of 128 elements, scale = amax / 448 (the e4m3 maximum) stored as float32, and the
element stored as e4m3 of x / scale. A group of zeros gets scale 0 and zero codes (SGLang's
reference divides by it; we keep the result finite). Raw storage casts to e4m3 directly,
saturating at ±448, as the TRT-LLM DSA rows and plain-MLA fp8 caches hold values.

fp8 values are kept as uint8 (`torch.float8_e4m3fn` viewed as bytes), so pools can place
them next to scale and bf16 bytes in one row.

Error bound: e4m3 has 3 mantissa bits, so rounding a normal value loses at most 2⁻⁴ of it;
below the normal range (2⁻⁶) the absolute error is at most half the smallest step, 2⁻¹⁰.
In scaled storage both apply in units of the scale.

>>> x = torch.tensor([[1.0, -2.0, 448.0 * 3] + [0.0] * 125])
>>> codes, scale = quantize_scaled(x)
>>> scale.tolist(), dequantize_scaled(codes, scale)[0, :3].tolist()
([[3.0]], [1.03125, -2.0625, 1344.0])
"""

from __future__ import annotations

import torch

from kvledger.sglang.specs import FP8_SCALE_GROUP

FP8_DTYPE = torch.float8_e4m3fn
FP8_MAX = 448.0  # torch.finfo(torch.float8_e4m3fn).max
FP8_REL_ERROR = 2.0**-4  # half a mantissa step of a normal e4m3 value, relative
FP8_ABS_ERROR = 2.0**-10  # half the smallest subnormal step, absolute (in units of the scale)


def quantize_scaled(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """x (..., n·128) → (uint8 codes (..., n·128), float32 scales (..., n))."""
    if x.shape[-1] % FP8_SCALE_GROUP:
        raise ValueError(f"scaled fp8 needs a multiple of {FP8_SCALE_GROUP} elements, got {x.shape[-1]}")
    groups = x.float().unflatten(-1, (-1, FP8_SCALE_GROUP))
    scale = groups.abs().amax(dim=-1) / FP8_MAX
    divisor = torch.where(scale > 0, scale, torch.ones_like(scale)).unsqueeze(-1)
    codes = (groups / divisor).clamp(-FP8_MAX, FP8_MAX).to(FP8_DTYPE)
    return codes.flatten(-2).view(torch.uint8), scale


def dequantize_scaled(codes: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """Inverse of `quantize_scaled`, in float32."""
    values = codes.view(FP8_DTYPE).float().unflatten(-1, (-1, FP8_SCALE_GROUP))
    return (values * scale.unsqueeze(-1)).flatten(-2)


def quantize_raw(x: torch.Tensor) -> torch.Tensor:
    """x → uint8 e4m3 codes, no scale; values beyond ±448 saturate."""
    return x.float().clamp(-FP8_MAX, FP8_MAX).to(FP8_DTYPE).view(torch.uint8)


def dequantize_raw(codes: torch.Tensor) -> torch.Tensor:
    return codes.view(FP8_DTYPE).float()


def as_bytes(x: torch.Tensor) -> torch.Tensor:
    """The bytes of a tensor's last dimension: (..., n) of itemsize s → uint8 (..., n·s)."""
    return x.contiguous().view(torch.uint8)


def from_bytes(b: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Reinterpret uint8 (..., n·s) as (..., n) of `dtype` (copying when not contiguous)."""
    return b.contiguous().view(dtype)
