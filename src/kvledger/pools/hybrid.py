"""HybridLinearKVPool: one facade over the full-attention pool, the state pool and the rows.

Global decoder-layer ids map to dense sub-pool ids, as in SGLang's HybridLinearKVPool
(mem_cache/memory_pool.py: `full_attention_layer_id_mapping`). GLM-5.3-Flash has 45 layers;
the 11 DSA layers 3, 7, …, 43 are full layers 0..10 and the 34 others linear layers 0..33:

    global  0 1 2 3 4 5 6 7 … 43 44
    full          0       1 … 10
    linear  0 1 2   3 4 5   … 32 33

Asking a linear layer for KV, or a full layer for state, raises LayerKindError naming what
the layer is. A model without linear layers has no state pool; a layer that caches nothing
(Nemotron-H MLP layers) has neither.

>>> from kvledger.sglang.specs import LatentRowSpec, RowLayout, StateSpec
>>> full = LatentKVPool(spec=LatentRowSpec(kv_lora_rank=512, qk_rope_head_dim=0,
...                     layout=RowLayout.BF16), num_layers=1, num_token_slots=4, device="cpu")
>>> state = MambaPool(spec=StateSpec(conv_shape=(3, 8), conv_itemsize=2,
...                   temporal_shape=(1, 8, 8), temporal_itemsize=4), num_layers=1,
...                   num_slots=2, conv_dtype=torch.bfloat16, temporal_dtype=torch.float32,
...                   device="cpu")
>>> pool = HybridLinearKVPool(full_kv_pool=full, mamba_pool=state,
...     req_to_token_pool=ReqToTokenPool(num_rows=1, max_context_tokens=4, device="cpu"),
...     full_layer_ids=(1,), linear_layer_ids=(0,), num_layers=2)
>>> pool.full_layer(1), pool.linear_layer(0)
(0, 0)
>>> pool.full_layer(0)
Traceback (most recent call last):
...
kvledger.pools.errors.LayerKindError: layer 0 is a linear-attention layer: it keeps a recurrent state, not KV
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from kvledger.pools.dsa import DsaTokenPool
from kvledger.pools.errors import IntegrityError, LayerKindError
from kvledger.pools.gqa import GqaKVPool
from kvledger.pools.latent import LatentKVPool
from kvledger.pools.req_to_token import ReqToTokenPool
from kvledger.pools.state import MambaPool

FullPool = LatentKVPool | DsaTokenPool | GqaKVPool


class HybridLinearKVPool:
    def __init__(self, *, full_kv_pool: FullPool, mamba_pool: MambaPool | None,
                 req_to_token_pool: ReqToTokenPool, full_layer_ids: Sequence[int],
                 linear_layer_ids: Sequence[int], num_layers: int) -> None:
        if len(full_layer_ids) != full_kv_pool.num_layers:
            raise ValueError(f"{len(full_layer_ids)} full layer ids for a "
                             f"{full_kv_pool.num_layers}-layer pool")
        if linear_layer_ids and (mamba_pool is None or len(linear_layer_ids) != mamba_pool.num_layers):
            raise ValueError(f"{len(linear_layer_ids)} linear layer ids without a matching state pool")
        self.full_kv_pool = full_kv_pool
        self.mamba_pool = mamba_pool
        self.req_to_token_pool = req_to_token_pool
        self.num_layers = num_layers
        self.full_layer_to_dense = {gid: i for i, gid in enumerate(full_layer_ids)}
        self.linear_layer_to_dense = {gid: i for i, gid in enumerate(linear_layer_ids)}

    def full_layer(self, layer_id: int) -> int:
        """Dense id in `full_kv_pool` of global layer `layer_id`."""
        return self._dense(layer_id, self.full_layer_to_dense, "KV")

    def linear_layer(self, layer_id: int) -> int:
        """Dense id in `mamba_pool` of global layer `layer_id`."""
        return self._dense(layer_id, self.linear_layer_to_dense, "state")

    def indexer_layer(self, layer_id: int) -> int:
        """Dense compress-tail id of a DSA layer that owns an indexer.

        Index keys themselves use `full_layer(layer_id)`: every DSA layer has a key buffer.
        """
        full = self.full_layer(layer_id)
        if not isinstance(self.full_kv_pool, DsaTokenPool):
            raise LayerKindError(f"layer {layer_id}: this model's full layers have no indexer")
        return self.full_kv_pool.indexer_of(full)

    def get_kv_buffer(self, layer_id: int) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """The latent `kv_buffer` (MLA/DSA) or the `(k_buffer, v_buffer)` pair (GQA) of a layer."""
        dense = self.full_layer(layer_id)
        if isinstance(self.full_kv_pool, GqaKVPool):
            return self.full_kv_pool.k_buffer[dense], self.full_kv_pool.v_buffer[dense]
        return self.full_kv_pool.kv_buffer[dense]

    def get_state(self, layer_id: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(conv, temporal) tensors `(K + 1, …)` of a linear-attention layer."""
        dense = self.linear_layer(layer_id)
        assert self.mamba_pool is not None  # a linear id implies a state pool (constructor)
        return self.mamba_pool.layer_state(dense)

    def check_integrity(self) -> None:
        self.full_kv_pool.check_integrity()
        self.req_to_token_pool.check_integrity()
        if self.mamba_pool is not None:
            self.mamba_pool.check_integrity()
        ids = [*self.full_layer_to_dense, *self.linear_layer_to_dense]
        if any(not 0 <= gid < self.num_layers for gid in ids):
            raise IntegrityError(f"a layer id outside 0..{self.num_layers - 1}")

    def _dense(self, layer_id: int, mapping: dict[int, int], want: str) -> int:
        if not 0 <= layer_id < self.num_layers:
            raise IndexError(f"layer {layer_id} out of range 0..{self.num_layers - 1}")
        found = mapping.get(layer_id)
        if found is not None:
            return found
        if layer_id in self.linear_layer_to_dense:
            raise LayerKindError(
                f"layer {layer_id} is a linear-attention layer: it keeps a recurrent state, not KV")
        if layer_id in self.full_layer_to_dense:
            raise LayerKindError(
                f"layer {layer_id} is a full-attention layer: it caches KV per token, not {want}")
        raise LayerKindError(f"layer {layer_id} caches nothing (an MLP/MoE layer): no {want}")
