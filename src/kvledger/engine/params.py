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
    w_qkv: torch.Tensor  # (D, 3·H·d): conv inputs for q, k and v
    conv: torch.Tensor  # (K, 3·H·d): depthwise causal conv, oldest input first
    w_decay: torch.Tensor  # (D, H·d): per-channel forget gate (KDA's fine-grained decay)
    decay_bias: torch.Tensor  # (H·d,): keeps the gates near 0.9 at init
    w_beta: torch.Tensor  # (D, H): delta-rule write strength per head
    w_gate: torch.Tensor  # (D, H·d): output gate
    out_norm: torch.Tensor  # (d,)
    w_out: torch.Tensor  # (H·d, D)
    mlp: MlpParams


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexerParams:
    w_q: torch.Tensor  # (D, Hi·128): index queries
    w_k: torch.Tensor  # (D, 128): one index key per token
    w_score: torch.Tensor  # (D, 128): per-channel pooling scores (the compress gate)
    ape: torch.Tensor  # (kpool, 128): score offset by position inside the group
    w_head: torch.Tensor  # (D, Hi): per-head weights of the index score


@dataclass(frozen=True, slots=True, kw_only=True)
class MlaParams:
    norm: torch.Tensor  # (D,)
    w_q: torch.Tensor  # (D, Hm·dq)
    w_kv_down: torch.Tensor  # (D, rank): the latent that is cached
    kv_norm: torch.Tensor  # (rank,)
    w_uk: torch.Tensor  # (Hm, dq, rank): per-head key up-projection, applied to the query
    w_uv: torch.Tensor  # (Hm, rank, dv): per-head value up-projection of the attended latent
    w_o: torch.Tensor  # (Hm·dv, D)
    indexer: IndexerParams
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
    return KdaParams(
        norm=draw.norm(d), w_qkv=draw.matrix(d, 3 * kd, fan_in=d),
        conv=draw.matrix(cfg.conv_kernel, 3 * kd, fan_in=cfg.conv_kernel),
        w_decay=draw.matrix(d, kd, fan_in=d), decay_bias=torch.full((kd,), 2.5),
        w_beta=draw.matrix(d, heads, fan_in=d), w_gate=draw.matrix(d, kd, fan_in=d),
        out_norm=draw.norm(cfg.kda_head_dim), w_out=draw.matrix(kd, d, fan_in=kd),
        mlp=_mlp(draw, cfg),
    )


def _mla(draw: _Draw, cfg: TinyConfig) -> MlaParams:
    d, rank, heads = cfg.hidden_size, cfg.kv_lora_rank, cfg.mla_heads
    dq, dv, di = cfg.qk_head_dim, cfg.v_head_dim, cfg.index_head_dim
    indexer = IndexerParams(
        w_q=draw.matrix(d, cfg.index_heads * di, fan_in=d), w_k=draw.matrix(d, di, fan_in=d),
        w_score=draw.matrix(d, di, fan_in=d), ape=draw.matrix(cfg.index_kpool, di, fan_in=1),
        w_head=draw.matrix(d, cfg.index_heads, fan_in=d),
    )
    return MlaParams(
        norm=draw.norm(d), w_q=draw.matrix(d, heads * dq, fan_in=d),
        w_kv_down=draw.matrix(d, rank, fan_in=d), kv_norm=draw.norm(rank),
        w_uk=draw.matrix(heads, dq, rank, fan_in=dq), w_uv=draw.matrix(heads, rank, dv, fan_in=rank),
        w_o=draw.matrix(heads * dv, d, fan_in=heads * dv), indexer=indexer, mlp=_mlp(draw, cfg),
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
