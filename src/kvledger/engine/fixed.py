"""Fixed-order arithmetic: results that do not depend on batch size, chunking or kernels.

The reference engine must produce the same bits whether a token is computed in a prompt of
one request or in a decode batch of sixteen, in one prefill chunk or after a cache hit. Plain
``torch.matmul`` does not give that: on CPU a 1-row product and the same row inside a 64-row
product can differ in the last bit (different BLAS kernels, different summation order).

So the model only uses operations whose rounding depends on their own operands:

1. elementwise ``+ − × ÷ √``, ``min``/``max``/``abs``/``floor``, comparisons and dtype casts
   (IEEE 754 rounds each of these correctly, in the vectorised and the scalar loop alike);
2. reductions as a balanced pairwise tree (:func:`fixed_sum`) over a power-of-two length,
   zero padded. Padding with zeros is transparent: when at most half the entries are
   non-padding, the first halving step adds exact zeros, so a list summed inside a longer
   padded batch gives the same bits as the list alone. The result gets ``+ 0.0`` so a
   negative zero never leaks out and padding cannot change a sign;
3. ``max`` reductions (exact) and stable sorts (ties broken by position);
4. :func:`fixed_exp`, an exp built from (1) by range reduction and a fixed polynomial.

Nothing here is fast; the model is tiny, so it does not need to be.

>>> x = torch.tensor([[1e8, 1.0, -1e8, 1.0]])
>>> fixed_sum(x, -1).item()  # ((1e8 + -1e8) + (1 + 1)): the tree, not left to right
2.0
>>> w = torch.arange(6.0).reshape(3, 2)
>>> linear(torch.tensor([[1.0, 2.0, 3.0]]), w).tolist()
[[16.0, 22.0]]
>>> round(fixed_exp(torch.tensor([1.0])).item(), 5), fixed_exp(torch.tensor([-200.0])).item()
(2.71828, 0.0)
"""

from __future__ import annotations

import math

import torch

LOG2_E = 1.4426950408889634
# Taylor coefficients of 2**f = e**(f·ln 2) for f in [0, 1): ln2**k / k!, k = 0..7
# (truncation below 2e-6). Within 6e-6 of torch.exp over [-80, 80].
_EXP2_COEFFS = tuple(math.log(2.0) ** k / math.factorial(k) for k in range(8))
_EXP2_MIN, _EXP2_MAX = -126.0, 127.0  # normal fp32 exponents; below the minimum exp is 0


def fixed_sum(x: torch.Tensor, dim: int) -> torch.Tensor:
    """Sum over ``dim`` as a balanced pairwise tree; ``dim`` is removed."""
    dim = dim % x.dim()
    n = x.shape[dim]
    if n == 0:
        return torch.zeros(x.shape[:dim] + x.shape[dim + 1:], dtype=x.dtype)
    size = 1 << (n - 1).bit_length()
    if size != n:
        pad_shape = list(x.shape)
        pad_shape[dim] = size - n
        x = torch.cat((x, torch.zeros(pad_shape, dtype=x.dtype)), dim=dim)
    while size > 1:
        size //= 2
        x = x.narrow(dim, 0, size) + x.narrow(dim, size, size)
    return x.squeeze(dim) + 0.0


def linear(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """``x @ weight`` with a fixed-order sum: x (..., K), weight (K, N) → (..., N)."""
    return fixed_sum(x.unsqueeze(-1) * weight, dim=-2)


def fixed_exp(x: torch.Tensor) -> torch.Tensor:
    """e**x from correctly rounded steps: 2**n (exact, built from bits) × 2**f (polynomial)."""
    y = (x * LOG2_E).clamp(_EXP2_MIN - 1.0, _EXP2_MAX)
    n = torch.floor(y)
    f = y - n  # exact: y and n share an exponent range
    p = torch.full_like(f, _EXP2_COEFFS[-1])
    for c in reversed(_EXP2_COEFFS[:-1]):
        p = p * f + c
    underflow = n < _EXP2_MIN
    bits = (n.clamp(min=_EXP2_MIN).to(torch.int32) + 127) << 23
    result = p * bits.view(torch.float32)
    return torch.where(underflow, torch.zeros_like(result), result)


def sigmoid(x: torch.Tensor) -> torch.Tensor:
    return 1.0 / (1.0 + fixed_exp(-x))


def silu(x: torch.Tensor) -> torch.Tensor:
    return x * sigmoid(x)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    mean_square = fixed_sum(x * x, -1) / x.shape[-1]
    return x / torch.sqrt(mean_square + eps).unsqueeze(-1) * weight


def l2_norm(x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    return x / torch.sqrt(fixed_sum(x * x, -1) + eps).unsqueeze(-1)


def softmax_weights(scores: torch.Tensor, valid: torch.Tensor, dim: int) -> torch.Tensor:
    """Unnormalised softmax numerators: exp(s − max) where valid, exact 0 elsewhere."""
    masked = torch.where(valid, scores, torch.full_like(scores, -math.inf))
    peak = masked.amax(dim=dim, keepdim=True)
    peak = torch.where(torch.isfinite(peak), peak, torch.zeros_like(peak))
    return torch.where(valid, fixed_exp(masked - peak), torch.zeros_like(scores))


def round_to(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """x rounded to ``dtype`` and back to float32: what a buffer of that dtype gives back."""
    return x.to(dtype).float()
