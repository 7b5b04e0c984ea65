"""DsaTokenPool: the DSA full-attention token pool = latent rows + index keys + compress tail.

Like SGLang's NSATokenToKVPool (a subclass of MLATokenToKVPool), it is an MLA latent pool
with an IndexKeyCache beside it, plus the compress tail when the indexer pools keys. Every
DSA layer gets an index-key buffer, under the same dense id as its latent rows (SGLang
allocates `index_k_with_scale_buffer` for all `layer_num` layers), but only layers that own
an indexer write keys and have a compress tail: GLM-5.2's "shared" layers reuse a
neighbour's top-k. `indexer_of(full)` maps a dense full-layer id to its dense tail id.

>>> from kvledger.sglang.specs import IndexKeySpec, LatentRowSpec, RowLayout
>>> pool = DsaTokenPool(
...     spec=LatentRowSpec(kv_lora_rank=512, qk_rope_head_dim=0, layout=RowLayout.FP8_SCALED),
...     index_spec=IndexKeySpec(head_dim=128, kpool=4, reserved_bytes=132, page_tokens=64),
...     has_indexer=(True,) * 11, num_token_slots=128, tail=None, device="cpu")
>>> pool.allocated_bytes == 128 * (5808 + 1452)  # (T + P) × 7,260 B per token
True
"""

from __future__ import annotations

import itertools

import torch

from kvledger.pools.errors import IntegrityError, LayerKindError
from kvledger.pools.index_keys import IndexKeyCache
from kvledger.pools.indices import check_layer
from kvledger.pools.latent import LatentKVPool
from kvledger.pools.tail import CompressTail
from kvledger.sglang.specs import IndexKeySpec, LatentRowSpec, TailSpec


class DsaTokenPool(LatentKVPool):
    def __init__(self, *, spec: LatentRowSpec, index_spec: IndexKeySpec,
                 has_indexer: tuple[bool, ...], num_token_slots: int, tail: TailSpec | None,
                 device: torch.device | str, elide_shared: bool = False) -> None:
        super().__init__(spec=spec, num_layers=len(has_indexer),
                         num_token_slots=num_token_slots, device=device)
        if num_token_slots % index_spec.page_tokens:
            raise ValueError(
                f"{num_token_slots} token slots are not whole {index_spec.page_tokens}-token pages"
            )
        dense = itertools.count()
        self._indexer_of = tuple(next(dense) if owns else None for owns in has_indexer)
        self.index_keys = IndexKeyCache(spec=index_spec, num_layers=self.num_layers,
                                        num_pages=num_token_slots // index_spec.page_tokens,
                                        device=device,
                                        elided=tuple(elide_shared and not owns
                                                     for owns in has_indexer))
        self.tail = (None if tail is None
                     else CompressTail(spec=tail, num_layers=sum(has_indexer), device=device))

    def indexer_of(self, full_layer: int) -> int:
        """Dense indexer id of a dense full-layer id; LayerKindError for a layer without one."""
        found = self._indexer_of[check_layer(full_layer, self.num_layers, "full")]
        if found is None:
            raise LayerKindError(f"full layer {full_layer} shares another layer's indexer: no tail")
        return found

    @property
    def allocated_bytes(self) -> int:
        """Token-budgeted bytes: latent rows and index keys (the tail is a side buffer)."""
        return super().allocated_bytes + self.index_keys.allocated_bytes

    def check_integrity(self) -> None:
        super().check_integrity()
        self.index_keys.check_integrity()
        if self.tail is not None:
            self.tail.check_integrity()
        if self.index_keys.num_pages * self.index_keys.spec.page_tokens != self.num_token_slots:
            raise IntegrityError("index key pages do not cover the latent token slots")
