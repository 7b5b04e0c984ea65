"""TinyModel: embedding → KDA and MLA layers (a full layer every 4th) → logits.

``forward`` runs one batch of chunks (prefill pieces and decode tokens mixed) against a
store and returns the logits of each chunk's last token. Every operation is fixed-order
(``engine.fixed``), so a token's logits are the same bits whatever else is in the batch,
however its prompt was chunked and whether its prefix came from the cache.
"""

from __future__ import annotations

import torch

from kvledger.engine.batch import ModelStore, SeqChunk
from kvledger.engine.config import TinyConfig
from kvledger.engine.fixed import linear, rms_norm
from kvledger.engine.kda import kda_layer
from kvledger.engine.mla import mla_layer
from kvledger.engine.params import KdaParams, MlaParams, TinyParams, init_params


class TinyModel:
    def __init__(self, cfg: TinyConfig, params: TinyParams | None = None) -> None:
        self.cfg = cfg
        self.params = params if params is not None else init_params(cfg)

    @torch.no_grad()
    def forward(self, chunks: list[SeqChunk], store: ModelStore) -> torch.Tensor:
        """Logits (len(chunks), vocab) of each chunk's last token."""
        if not chunks:
            raise ValueError("forward: empty batch")
        ids = torch.cat([c.input_ids for c in chunks])
        if int(ids.min()) < 0 or int(ids.max()) >= self.cfg.vocab_size:
            raise ValueError(f"forward: token ids must lie in 0..{self.cfg.vocab_size - 1}")
        h = self.params.embed[ids]
        for layer_id, p in enumerate(self.params.layers):
            match p:
                case KdaParams():
                    h = kda_layer(p, self.cfg, h, chunks, layer_id, store)
                case MlaParams():
                    h = mla_layer(p, self.cfg, h, chunks, layer_id, store)
        lasts = torch.cumsum(torch.tensor([c.num_new_tokens for c in chunks]), 0) - 1
        return linear(rms_norm(h[lasts], self.params.final_norm), self.params.lm_head)
