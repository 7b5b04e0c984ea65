"""CompressTail: the per-request bf16 buffers of a DSA indexer's open kpool group.

With `index_kpool_compress`, kpool consecutive tokens are pooled into one index key; until a
group is complete its unpooled keys and gate scores wait here. Per indexer layer two bf16
tensors `(rows, width_tokens, head_dim)`: `key` and `score`. rows = max_running_requests + 2
(req_to_token rows + 1, SGLang memory_pool.py `_compress_tail_k` / `_compress_tail_score`),
indexed by request row; width = kpool + speculative draft tokens. Not part of the token
budget: it comes out of the slack (side ledger).

>>> from kvledger.sglang.specs import TailSpec
>>> tail = CompressTail(spec=TailSpec(rows=66, width_tokens=4, head_dim=128), num_layers=11,
...                     device="cpu")
>>> tail.key[0].shape, tail.allocated_bytes  # 1.42 MiB: the article's 64-request figure
(torch.Size([66, 4, 128]), 1486848)
"""

from __future__ import annotations

import torch

from kvledger.pools.errors import IntegrityError
from kvledger.pools.indices import IndexLike, as_index
from kvledger.sglang.specs import TailSpec


class CompressTail:
    def __init__(self, *, spec: TailSpec, num_layers: int, device: torch.device | str) -> None:
        if spec.itemsize != 2:
            raise ValueError(f"compress tail is bfloat16 (2 B), spec says {spec.itemsize} B")
        self.spec = spec
        self.device = torch.device(device)
        self.num_layers = num_layers
        shape = (spec.rows, spec.width_tokens, spec.head_dim)
        self.key = [torch.zeros(shape, dtype=torch.bfloat16, device=self.device)
                    for _ in range(num_layers)]
        self.score = [torch.zeros(shape, dtype=torch.bfloat16, device=self.device)
                      for _ in range(num_layers)]

    @property
    def allocated_bytes(self) -> int:
        return sum(t.nbytes for t in self.key) + sum(t.nbytes for t in self.score)

    def clear_rows(self, rows: IndexLike) -> None:
        """Zero the open group of these request rows in every layer (a request (re)starts)."""
        idx = as_index(rows, size=self.spec.rows, what="tail row", device=self.device)
        for key, score in zip(self.key, self.score, strict=True):
            key[idx] = 0
            score[idx] = 0

    def check_integrity(self) -> None:
        want = (self.spec.rows, self.spec.width_tokens, self.spec.head_dim)
        for t in (*self.key, *self.score):
            if tuple(t.shape) != want or t.dtype != torch.bfloat16:
                raise IntegrityError(f"compress tail buffer is {tuple(t.shape)} {t.dtype}, want {want}")
        if len(self.key) != self.num_layers or len(self.score) != self.num_layers:
            raise IntegrityError("compress tail: one key and one score buffer per indexer layer")
