"""KDA layer: short causal convolutions, then a gated delta-rule state per head in fp32.

Per token t and head (S is d_k × d_v, α a per-channel forget gate, β a write strength)::

    x_t        = conv(q, k, v inputs of t−3 .. t), then SiLU      (kernel 4)
    S'         = diag(α_t) · S_{t−1}                               (decay)
    S_t        = S' + β_t · k_t ⊗ (v_t − S'ᵀ k_t)                   (delta rule)
    o_t        = S_tᵀ q_t = S'ᵀ q_t + β_t (k_t · q_t)(v_t − S'ᵀ k_t)  (read)

The read uses the right-hand form (an identity, the one chunked KDA kernels use), so S'ᵀk
and S'ᵀq come out of one reduction per step.

The recurrence runs token by token, so a state resumed from a checkpoint continues exactly
as if the prompt had never been cut. The conv inputs are rounded to the conv-state dtype
(bf16) and the state to the temporal dtype after every token, the values a stored state
gives back, so a chunk boundary never changes a bit. The conv state after ``L`` tokens is
the inputs of positions L−3 .. L−1 (zeros before position 0).
"""

from __future__ import annotations

import torch

from kvledger.engine.batch import ModelStore, SeqChunk
from kvledger.engine.config import CONV_DTYPE, TinyConfig
from kvledger.engine.fixed import fixed_sum, l2_norm, linear, rms_norm, round_to, sigmoid, silu
from kvledger.engine.mlp import mlp
from kvledger.engine.params import KdaParams


def kda_layer(p: KdaParams, cfg: TinyConfig, h: torch.Tensor, chunks: list[SeqChunk],
              layer_id: int, store: ModelStore) -> torch.Tensor:
    """h (N, D) → h (N, D), the N new tokens of ``chunks`` concatenated in order."""
    heads, dk = cfg.kda_heads, cfg.kda_head_dim
    n_tokens = h.shape[0]
    x = rms_norm(h, p.norm)
    qkv, decay_logit, beta_logit, gate_logit = linear(x, p.w_in).split(p.in_sizes, dim=-1)
    conv_in = round_to(qkv, CONV_DTYPE)
    gates = sigmoid(torch.cat((decay_logit + p.decay_bias, beta_logit, gate_logit), dim=-1))
    decay, beta, gate = gates.split(p.in_sizes[1:], dim=-1)
    decay = decay.reshape(n_tokens, heads, dk, 1)
    beta = beta.reshape(n_tokens, heads, 1, 1)
    gate = gate.reshape(n_tokens, heads, dk)

    conv_state, temporal = _initial_states(cfg, chunks, layer_id, store)
    windows, mixed = [], []
    offset = 0
    for b, chunk in enumerate(chunks):
        window = torch.cat((conv_state[b], conv_in[offset:offset + chunk.num_new_tokens]))
        windows.append(window)
        mixed.append(silu(_causal_conv(window, p.conv, chunk.num_new_tokens)))
        offset += chunk.num_new_tokens
    q, k, v = torch.cat(mixed).view(n_tokens, 3, heads, dk).unbind(1)
    q = l2_norm(q) * dk**-0.5
    k = l2_norm(k)

    kq = fixed_sum(k * q, dim=-1).view(n_tokens, heads, 1)
    k_and_q = torch.stack((k, q), dim=2).unsqueeze(-1)  # (N, heads, 2, dk, 1)
    out = _recurrence(cfg, chunks, windows, temporal, (k_and_q, k, v, kq, decay, beta),
                      layer_id, store)
    gated = rms_norm(out, p.out_norm) * gate
    h = h + linear(gated.reshape(n_tokens, heads * dk), p.w_out)
    return h + mlp(p.mlp, h)


def _initial_states(cfg: TinyConfig, chunks: list[SeqChunk], layer_id: int,
                    store: ModelStore) -> tuple[torch.Tensor, torch.Tensor]:
    """States before each chunk: read from the store, zeros for a request at position 0."""
    n = len(chunks)
    conv = torch.zeros((n, cfg.conv_kernel - 1, cfg.conv_channels))
    temporal = torch.zeros((n, cfg.kda_heads, cfg.kda_head_dim, cfg.kda_head_dim))
    resumed = [b for b, c in enumerate(chunks) if c.start_tokens > 0]
    if resumed:
        slots = torch.tensor([chunks[b].state_slot for b in resumed], dtype=torch.int64)
        stored_conv, stored_temporal = store.read_state(layer_id, slots)
        conv[resumed], temporal[resumed] = stored_conv, stored_temporal
    return conv, temporal


def _causal_conv(window: torch.Tensor, weight: torch.Tensor, n: int) -> torch.Tensor:
    """window (K−1+n, C) → (n, C): Σ_j weight[j] · window[t + j], oldest input first."""
    out = weight[0] * window[0:n]
    for j in range(1, weight.shape[0]):
        out = out + weight[j] * window[j:j + n]
    return out


def _recurrence(cfg: TinyConfig, chunks: list[SeqChunk], windows: list[torch.Tensor],
                temporal: torch.Tensor, inputs: tuple[torch.Tensor, ...], layer_id: int,
                store: ModelStore) -> torch.Tensor:
    """Step all chunks together, one position at a time; save checkpoints on the way."""
    k_and_q, k, v, kq, decay, beta = inputs
    keep = cfg.conv_kernel - 1
    lengths = torch.tensor([c.num_new_tokens for c in chunks])
    offsets = torch.cumsum(lengths, 0) - lengths
    saves = {(b, at - c.start_tokens - 1): slot
             for b, c in enumerate(chunks) for at, slot in c.checkpoints}
    out = torch.empty_like(v)
    state_dtype = cfg.temporal_torch_dtype
    for i in range(int(lengths.max())):
        active = torch.nonzero(lengths > i).squeeze(1)
        rows = offsets[active] + i
        s = temporal[active] * decay[rows]
        read = fixed_sum(s.unsqueeze(2) * k_and_q[rows], dim=-2)  # (A, heads, 2, dv)
        delta = v[rows] - read[:, :, 0]
        b = beta[rows]
        s = s + (b * k[rows].unsqueeze(-1)) * delta.unsqueeze(-2)
        if state_dtype != torch.float32:
            s = round_to(s, state_dtype)
        out[rows] = read[:, :, 1] + (b.view(-1, b.shape[1], 1) * kq[rows]) * delta
        temporal[active] = s
        for j, b in enumerate(active.tolist()):
            slot = saves.get((b, i))
            if slot is not None:
                conv_after = windows[b][i + 1:i + 1 + keep]
                store.write_state(layer_id, torch.tensor([slot]), conv_after.unsqueeze(0),
                                  s[j:j + 1])
    slots = torch.tensor([c.state_slot for c in chunks], dtype=torch.int64)
    final_conv = torch.stack([w[w.shape[0] - keep:] for w in windows])
    store.write_state(layer_id, slots, final_conv, temporal)
    return out
