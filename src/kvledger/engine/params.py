"""Seeded random weights for the tiny model: one frozen record per layer kind.

Every matrix is drawn from one ``torch.Generator`` seeded by ``TinyConfig.seed``, in a fixed
order, scaled by 1/√fan_in so activations stay O(1) through the residual stream. Matrices
are stored (in, out): the model multiplies rows by them with ``fixed.linear``.

>>> from kvledger.engine.config import TinyConfig
>>> p = init_params(TinyConfig())
>>> [type(layer).__name__ for layer in p.layers][:4], tuple(p.embed.shape)
(['KdaParams', 'KdaParams', 'KdaParams', 'MlaParams'], (256, 64))
>>> bool(torch.equal(p.lm_head, init_params(TinyConfig()).lm_head))  # same seed, same bits
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from kvledger.engine.config import TinyConfig
from kvledger.model.arch import LayerKind


@dataclass(frozen=True, slots=True, kw_only=True)
class MlpParams:
    norm: torch.Tensor  # (D,)
    w_gate_up: torch.Tensor  # (D, 2M): SiLU gate and up projection
    w_down: torch.Tensor  # (M, D)


@dataclass(frozen=True, slots=True, kw_only=True)
class KdaParams:
    norm: torch.Tensor  # (D,)
    # All input projections side by side, one fixed-order product for all of them:
    # conv inputs for q, k and v (3·H·d) | per-channel forget gate, KDA's fine-grained decay
    # (H·d) | delta-rule write strength (H) | output gate (H·d)
    w_in: torch.Tensor  # (D, Σ in_sizes)
    in_sizes: tuple[int, ...]
    conv: torch.Tensor  # (K, 3·H·d): depthwise causal conv, oldest input first
    decay_bias: torch.Tensor  # (H·d,): keeps the gates near 0.92 at init
    out_norm: torch.Tensor  # (d,)
    w_out: torch.Tensor  # (H·d, D)
    mlp: MlpParams


@dataclass(frozen=True, slots=True, kw_only=True)
class MlaParams:
    norm: torch.Tensor  # (D,)
    # Input projections side by side: query (Hm·dq) | latent, the row that is cached (rank) |
    # index queries (Hi·128) | index key (128) | per-channel pooling score, the compress gate
    # (128) | per-head weights of the index score (Hi)
    w_in: torch.Tensor  # (D, Σ in_sizes)
    in_sizes: tuple[int, ...]
    kv_norm: torch.Tensor  # (rank,)
    w_uk: torch.Tensor  # (Hm, dq, rank): per-head key up-projection, applied to the query
    w_uv: torch.Tensor  # (Hm, rank, dv): per-head value up-projection of the attended latent
    w_o: torch.Tensor  # (Hm·dv, D)
    ape: torch.Tensor  # (kpool, 128): pooling-score offset by position inside the group
    mlp: MlpParams


@dataclass(frozen=True, slots=True, kw_only=True)
class TinyParams:
    embed: torch.Tensor  # (V, D)
    layers: tuple[KdaParams | MlaParams, ...]
    final_norm: torch.Tensor  # (D,)
    lm_head: torch.Tensor  # (D, V)


class _Draw:
    def __init__(self, seed: int) -> None:
        self.gen = torch.Generator().manual_seed(seed)

    def matrix(self, *shape: int, fan_in: int) -> torch.Tensor:
        return torch.randn(shape, generator=self.gen) / math.sqrt(fan_in)

    def norm(self, n: int) -> torch.Tensor:
        return 1.0 + 0.1 * torch.randn(n, generator=self.gen)


def _mlp(draw: _Draw, cfg: TinyConfig) -> MlpParams:
    d, m = cfg.hidden_size, cfg.mlp_hidden_size
    return MlpParams(norm=draw.norm(d), w_gate_up=draw.matrix(d, 2 * m, fan_in=d),
                     w_down=draw.matrix(m, d, fan_in=m))


def _kda(draw: _Draw, cfg: TinyConfig) -> KdaParams:
    d, kd, heads = cfg.hidden_size, cfg.kda_dim, cfg.kda_heads
    sizes = (3 * kd, kd, heads, kd)
    return KdaParams(
        norm=draw.norm(d), w_in=draw.matrix(d, sum(sizes), fan_in=d), in_sizes=sizes,
        conv=draw.matrix(cfg.conv_kernel, 3 * kd, fan_in=cfg.conv_kernel),
        decay_bias=torch.full((kd,), 2.5), out_norm=draw.norm(cfg.kda_head_dim),
        w_out=draw.matrix(kd, d, fan_in=kd), mlp=_mlp(draw, cfg),
    )


def _mla(draw: _Draw, cfg: TinyConfig) -> MlaParams:
    d, rank, heads = cfg.hidden_size, cfg.kv_lora_rank, cfg.mla_heads
    dq, dv, di = cfg.qk_head_dim, cfg.v_head_dim, cfg.index_head_dim
    sizes = (heads * dq, rank, cfg.index_heads * di, di, di, cfg.index_heads)
    return MlaParams(
        norm=draw.norm(d), w_in=draw.matrix(d, sum(sizes), fan_in=d), in_sizes=sizes,
        kv_norm=draw.norm(rank), w_uk=draw.matrix(heads, dq, rank, fan_in=dq),
        w_uv=draw.matrix(heads, rank, dv, fan_in=rank),
        w_o=draw.matrix(heads * dv, d, fan_in=heads * dv),
        ape=draw.matrix(cfg.index_kpool, di, fan_in=1), mlp=_mlp(draw, cfg),
    )


def init_params(cfg: TinyConfig) -> TinyParams:
    draw = _Draw(cfg.seed)
    embed = draw.matrix(cfg.vocab_size, cfg.hidden_size, fan_in=1)
    layers: list[KdaParams | MlaParams] = []
    for kind in cfg.layer_kinds:
        match kind:
            case LayerKind.LINEAR:
                layers.append(_kda(draw, cfg))
            case LayerKind.FULL:
                layers.append(_mla(draw, cfg))
    return TinyParams(embed=embed, layers=tuple(layers), final_norm=draw.norm(cfg.hidden_size),
                      lm_head=draw.matrix(cfg.hidden_size, cfg.vocab_size, fan_in=cfg.hidden_size))
