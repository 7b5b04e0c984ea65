"""Parameter counts of a model split by the part of the network that holds them.

The split is what decides weights per rank: SGLang shards each part over a different group
(embeddings, attention, dense MLPs, routed experts; see `kvledger.sglang.rankweights`). Families that
read a checkpoint's blocks fill it in; `ModelArch.num_params` is its total. Draft (MTP) layers
are kept apart: SGLang loads them only with speculative decoding.

>>> p = ParamCounts(embedding=10, lm_head=10, attention=30, linear_mixers=0, mlp=20,
...                 experts=100, vision=0, draft_attention=3, draft_ffn=12, draft_layers=1)
>>> p.total, p.draft
(170, 15)
"""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True, slots=True, kw_only=True)
class ParamCounts:
    embedding: int  # input embedding
    lm_head: int  # 0 when tied to the embedding
    attention: int  # full-attention layers (projections, DSA indexers)
    linear_mixers: int  # linear-attention mixers (KDA, Gated DeltaNet, Mamba2)
    mlp: int  # dense MLPs, shared experts and routers
    experts: int  # routed experts
    vision: int  # vision tower
    # ReplicatedLinear / plain nn.Linear weights every rank holds whole (Kimi-K3's latent MoE
    # projections, routers and MoonViT tower)
    replicated: int = 0
    draft_attention: int = 0  # all MTP layers' attention
    draft_ffn: int = 0  # all MTP layers' MLP / MoE and input projection
    draft_layers: int = 0

    @property
    def total(self) -> int:
        """Parameters SGLang loads without speculative decoding."""
        return sum(getattr(self, f.name) for f in fields(self)
                   if not f.name.startswith("draft"))

    @property
    def draft(self) -> int:
        return self.draft_attention + self.draft_ffn
