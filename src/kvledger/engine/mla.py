"""NoPE MLA layer with a DSA indexer: one cached latent row per token, sparse attention.

Per token the layer caches one latent row c (kv_lora_rank elements, stored fp8 scaled or
bf16 by the store). Attention runs in latent space with per-head up-projections at attention
time: the query is projected into the latent by W_uk[h] and the attended latent back out by
W_uv[h], so keys and values are never materialised per head::

    score(h, s) = (W_uk[h]ᵀ q_h) · c_s / √d_q        out_h = W_uv[h]ᵀ Σ_s softmax(score)_s c_s

Only the positions the indexer selects are attended. Every latent is read back from the
store before use (this chunk's too), so a token computed now and one loaded from the cache
contribute the same rounded bytes.
"""

from __future__ import annotations

import torch

from kvledger.engine.batch import ModelStore, SeqChunk
from kvledger.engine.config import TAIL_DTYPE, TinyConfig
from kvledger.engine.fixed import fixed_sum, linear, rms_norm, round_to, softmax_weights
from kvledger.engine.indexer import select_tokens, update_index_keys
from kvledger.engine.mlp import mlp
from kvledger.engine.params import MlaParams


def mla_layer(p: MlaParams, cfg: TinyConfig, h: torch.Tensor, chunks: list[SeqChunk],
              layer_id: int, store: ModelStore) -> torch.Tensor:
    """h (N, D) → h (N, D), the N new tokens of ``chunks`` concatenated in order."""
    n_tokens = h.shape[0]
    heads, idx_heads = cfg.mla_heads, cfg.index_heads
    x = rms_norm(h, p.norm)
    q, latent, index_q, index_k, index_s, index_w = linear(x, p.w_in).split(p.in_sizes, dim=-1)
    latent = rms_norm(latent, p.kv_norm)
    q = q.reshape(n_tokens, heads, cfg.qk_head_dim)
    q_latent = fixed_sum(q.unsqueeze(-1) * p.w_uk, dim=-2)  # (N, heads, rank)
    index_q = index_q.reshape(n_tokens, idx_heads, cfg.index_head_dim)
    index_k = round_to(index_k, TAIL_DTYPE)
    index_s = round_to(index_s, TAIL_DTYPE)

    outs = []
    offset = 0
    scale = cfg.qk_head_dim**-0.5
    for chunk in chunks:
        rows = slice(offset, offset + chunk.num_new_tokens)
        offset += chunk.num_new_tokens
        new_locs = chunk.token_locs[chunk.start_tokens:]
        store.write_latents(layer_id, new_locs, latent[rows])
        update_index_keys(p.ape, cfg, chunk, index_k[rows], index_s[rows], layer_id, store)
        positions, valid = select_tokens(cfg, chunk, index_q[rows], index_w[rows], layer_id, store)
        n, width = positions.shape
        cached = store.read_latents(layer_id, chunk.token_locs[positions.reshape(-1)])
        cached = cached.view(n, 1, width, cfg.kv_lora_rank)
        scores = fixed_sum(q_latent[rows].unsqueeze(2) * cached, dim=-1) * scale  # (n, heads, S)
        weights = softmax_weights(scores, valid.unsqueeze(1), dim=-1)
        attended = fixed_sum(weights.unsqueeze(-1) * cached, dim=-2)  # (n, heads, rank)
        attended = attended / fixed_sum(weights, dim=-1).unsqueeze(-1)
        per_head = fixed_sum(attended.unsqueeze(-1) * p.w_uv, dim=-2)  # (n, heads, dv)
        outs.append(per_head.reshape(n, heads * cfg.v_head_dim))
    h = h + linear(torch.cat(outs), p.w_o)
    return h + mlp(p.mlp, h)
