"""The DSA indexer with kpool compression: pooled fp8 keys, a compress tail, top-k groups.

Keys are pooled ``kpool`` tokens → one key (per channel, softmax over the group of score +
position offset, as SGLang's ``kpool_compress`` kernels do), rounded to bf16 and written as
fp8 with a per-128 scale into the ``IndexKeyCache`` at the group's first token slot. The
open group's keys and scores wait in the compress tail (bf16) until the group closes.

A query at position t sees ``G = (t+1) // kpool`` closed groups. It scores each one
(Σ_heads w_h · ReLU(q_h · key_g)), keeps the best ``index_topk / kpool`` (stable sort: ties
go to the earlier group), expands them to tokens and always adds the open group's tokens
``G·kpool .. t`` (SGLang ``topk_from_pooled_history_logits`` appends the tail likewise)::

    kpool 4, topk 8, t = 13:   groups 0 1 2 | open 12 13
    scores                     .3 .9 .5     →  keep groups 1, 2  →  tokens 4..11, 12, 13

A stale index key (one the cache lost or never restored) changes which groups win, and so
the output: this is what an indexer without a host copy gets wrong after a loadback.
"""

from __future__ import annotations

import torch

from kvledger.engine.batch import ModelStore, SeqChunk
from kvledger.engine.config import TAIL_DTYPE, TinyConfig
from kvledger.engine.fixed import fixed_sum, round_to, softmax_weights


def update_index_keys(ape: torch.Tensor, cfg: TinyConfig, chunk: SeqChunk, keys: torch.Tensor,
                      scores: torch.Tensor, layer_id: int, store: ModelStore) -> None:
    """Pool every group this chunk closes; leave the still-open group in the tail.

    ``keys`` and ``scores`` (n, head_dim) are already rounded to bf16, the tail's dtype.
    """
    kpool = cfg.index_kpool
    start, end = chunk.start_tokens, chunk.end_tokens
    open_start = start - start % kpool
    tail_key, tail_score = store.tail_buffers(layer_id)
    if start % kpool:
        carried = start % kpool
        keys = torch.cat((tail_key[chunk.tail_row, :carried].float(), keys))
        scores = torch.cat((tail_score[chunk.tail_row, :carried].float(), scores))
    num_closed = (end - end % kpool - open_start) // kpool
    if num_closed:
        closed = num_closed * kpool
        group_keys = keys[:closed].view(num_closed, kpool, -1)
        logits = scores[:closed].view(num_closed, kpool, -1) + ape
        weights = softmax_weights(logits, torch.ones_like(logits, dtype=torch.bool), dim=1)
        pooled = fixed_sum(weights * group_keys, dim=1) / fixed_sum(weights, dim=1)
        firsts = open_start + kpool * torch.arange(num_closed)
        store.write_index_keys(layer_id, chunk.token_locs[firsts], round_to(pooled, TAIL_DTYPE))
    remaining = end % kpool
    if remaining:
        tail_key[chunk.tail_row, :remaining] = keys[-remaining:].to(TAIL_DTYPE)
        tail_score[chunk.tail_row, :remaining] = scores[-remaining:].to(TAIL_DTYPE)


def select_tokens(cfg: TinyConfig, chunk: SeqChunk, queries: torch.Tensor,
                  head_weights: torch.Tensor, layer_id: int,
                  store: ModelStore) -> tuple[torch.Tensor, torch.Tensor]:
    """Positions each new token attends to: (n, S) int64 and a validity mask (n, S).

    ``queries`` (n, heads, head_dim), ``head_weights`` (n, heads). Positions come in a
    canonical order (selected groups ascending, then the open group) so the attention sums
    are the same whether the query ran in a prefill chunk or in decode.
    """
    kpool, budget = cfg.index_kpool, cfg.index_topk // cfg.index_kpool
    n = chunk.num_new_tokens
    positions = chunk.start_tokens + torch.arange(n)
    visible = (positions + 1) // kpool  # closed groups each query may use
    num_groups = int(visible[-1])
    if num_groups:
        firsts = kpool * torch.arange(num_groups)
        keys = store.read_index_keys(layer_id, chunk.token_locs[firsts])
        dots = fixed_sum(queries.unsqueeze(2) * keys, dim=-1).clamp(min=0.0)  # (n, heads, G)
        logits = fixed_sum(dots * head_weights.unsqueeze(-1), dim=1)  # (n, G)
        usable = torch.arange(num_groups) < visible.unsqueeze(1)
        ranked = torch.where(usable, logits, torch.full_like(logits, -torch.inf))
        order = torch.sort(ranked, dim=1, descending=True, stable=True).indices[:, :budget]
        picked_ok = torch.gather(usable, 1, order)
        groups = torch.where(picked_ok, order, torch.full_like(order, num_groups))
        if groups.shape[1] < budget:  # always `budget` columns: the layout is per query
            pad = torch.full((n, budget - groups.shape[1]), num_groups)
            groups = torch.cat((groups, pad), dim=1)
        groups, _ = torch.sort(groups, dim=1)  # ascending; unused picks sort last
    else:
        groups = torch.zeros((n, budget), dtype=torch.int64)
    group_ok = groups < num_groups
    within = torch.arange(kpool)
    group_pos = (groups.unsqueeze(-1) * kpool + within).reshape(n, -1)
    group_valid = group_ok.repeat_interleave(kpool, dim=1)
    tail_pos = (visible * kpool).unsqueeze(1) + within[:-1]
    tail_valid = tail_pos <= positions.unsqueeze(1)
    selected = torch.cat((group_pos, tail_pos), dim=1)
    valid = torch.cat((group_valid, tail_valid), dim=1)
    return torch.where(valid, selected, torch.zeros_like(selected)), valid
