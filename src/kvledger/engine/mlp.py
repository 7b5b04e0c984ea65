"""The dense SwiGLU MLP every layer ends with (pre-norm, residual added by the caller)."""

from __future__ import annotations

import torch

from kvledger.engine.fixed import linear, rms_norm, silu
from kvledger.engine.params import MlpParams


def mlp(p: MlpParams, h: torch.Tensor) -> torch.Tensor:
    gate, up = linear(rms_norm(h, p.norm), p.w_gate_up).chunk(2, dim=-1)
    return linear(silu(gate) * up, p.w_down)
