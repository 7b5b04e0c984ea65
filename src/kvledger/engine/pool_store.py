"""PoolStore: the model's ``ModelStore`` backed by the real device pools.

Global layer ids go through ``HybridLinearKVPool``'s maps (asking a KDA layer for KV fails
there, loudly). Latent rows and index keys are encoded by the pools themselves (fp8 scaled
with a float32 scale per 128, or bf16); pooled index keys live at the key slot of their
group's first token (``IndexKeyCache.group_key_locs``).
"""

from __future__ import annotations

import torch

from kvledger.pools.dsa import DsaTokenPool
from kvledger.pools.hybrid import HybridLinearKVPool


class PoolStore:
    def __init__(self, kv: HybridLinearKVPool) -> None:
        full = kv.full_kv_pool
        if not isinstance(full, DsaTokenPool) or full.tail is None or kv.mamba_pool is None:
            raise ValueError("PoolStore: the reference model needs a DSA token pool with a "
                             "compress tail and a state pool")
        self.kv = kv
        self.full = full
        self.mamba = kv.mamba_pool
        self.tail = full.tail

    def write_latents(self, layer_id: int, token_locs: torch.Tensor, latent: torch.Tensor) -> None:
        self.full.set_rows(self.kv.full_layer(layer_id), token_locs, latent)

    def read_latents(self, layer_id: int, token_locs: torch.Tensor) -> torch.Tensor:
        return self.full.get_rows(self.kv.full_layer(layer_id), token_locs)

    def write_index_keys(self, layer_id: int, token_locs: torch.Tensor, keys: torch.Tensor) -> None:
        cache = self.full.index_keys
        cache.set_keys(self.kv.indexer_layer(layer_id), cache.group_key_locs(token_locs), keys)

    def read_index_keys(self, layer_id: int, token_locs: torch.Tensor) -> torch.Tensor:
        cache = self.full.index_keys
        return cache.get_keys(self.kv.indexer_layer(layer_id), cache.group_key_locs(token_locs))

    def tail_buffers(self, layer_id: int) -> tuple[torch.Tensor, torch.Tensor]:
        dense = self.kv.indexer_layer(layer_id)
        return self.tail.key[dense], self.tail.score[dense]

    def read_state(self, layer_id: int, slots: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        conv, temporal = self.mamba.read(self.kv.linear_layer(layer_id), slots)
        return conv.float(), temporal.float()

    def write_state(self, layer_id: int, slots: torch.Tensor, conv: torch.Tensor,
                    temporal: torch.Tensor) -> None:
        self.mamba.write(self.kv.linear_layer(layer_id), slots, conv, temporal)
