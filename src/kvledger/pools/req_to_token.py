"""ReqToTokenPool: one int32 row per running request mapping its positions to token slots.

Shape `(rows + 1, max_context_tokens)`: rows 1..rows are handed out by an IdAllocator, row 0
is a padding row (dummy requests in padded batches point there) and is never handed out.
`max_context_tokens` = context length + SGLang's 4 extra tokens + speculative draft tokens
(`kvledger.sglang.ledger.request_ledger`), so the tensor's bytes are the side ledger's
req_to_token row by construction.

>>> pool = ReqToTokenPool(num_rows=2, max_context_tokens=8, device="cpu")
>>> row = int(pool.alloc(1)[0])
>>> pool.write_extend(rows=[row], prefix_lens=[0], seq_lens=[3], token_locs=[64, 65, 66])
>>> pool.read(row, 3).tolist(), pool.req_to_token.shape
([64, 65, 66], torch.Size([3, 8]))
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from kvledger.pools.ids import IdAllocator
from kvledger.pools.indices import IndexLike, as_index


class ReqToTokenPool:
    def __init__(self, *, num_rows: int, max_context_tokens: int, device: torch.device | str) -> None:
        self.device = torch.device(device)
        self.max_context_tokens = max_context_tokens
        self.rows = IdAllocator(capacity=num_rows, what="request row")
        self.req_to_token = torch.zeros(
            (num_rows + 1, max_context_tokens), dtype=torch.int32, device=self.device
        )

    @property
    def num_rows(self) -> int:
        return self.rows.capacity

    @property
    def allocated_bytes(self) -> int:
        return self.req_to_token.nbytes

    def alloc(self, n: int) -> np.ndarray | None:
        return self.rows.alloc(n)

    def free(self, rows: np.ndarray | Sequence[int]) -> None:
        self.rows.free(rows)

    def write_extend(self, *, rows: IndexLike, prefix_lens: Sequence[int] | np.ndarray,
                     seq_lens: Sequence[int] | np.ndarray, token_locs: IndexLike) -> None:
        """Write positions prefix..seq−1 of each row from the concatenated `token_locs`."""
        prefix = np.asarray(prefix_lens, dtype=np.int64).reshape(-1)
        seq = np.asarray(seq_lens, dtype=np.int64).reshape(-1)
        extend = seq - prefix
        if prefix.size and (int(prefix.min()) < 0 or int(extend.min()) < 0):
            raise ValueError("need 0 ≤ prefix_lens ≤ seq_lens for every row")
        if seq.size and int(seq.max()) > self.max_context_tokens:
            raise IndexError(
                f"position {int(seq.max()) - 1} beyond max_context_tokens {self.max_context_tokens}"
            )
        row_idx = as_index(rows, size=self.num_rows + 1, what="request row", device=self.device)
        locs = as_index(token_locs, size=np.iinfo(np.int32).max, what="token slot",
                        device=self.device)
        if row_idx.numel() != prefix.size or locs.numel() != int(extend.sum()):
            raise ValueError(
                f"{row_idx.numel()} rows, {prefix.size} lengths, {locs.numel()} token slots for "
                f"{int(extend.sum())} positions"
            )
        counts = torch.as_tensor(extend, device=self.device)
        starts = torch.as_tensor(prefix, device=self.device)
        which = torch.repeat_interleave(torch.arange(prefix.size, device=self.device), counts)
        offsets = torch.arange(locs.numel(), device=self.device) - (
            torch.cumsum(counts, 0) - counts)[which]
        self.req_to_token[row_idx[which], starts[which] + offsets] = locs.to(torch.int32)

    def read(self, row: int, num_tokens: int) -> torch.Tensor:
        """Token slots of positions 0..num_tokens−1 of `row` (a view)."""
        as_index(row, size=self.num_rows + 1, what="request row", device="cpu")
        if not 0 <= num_tokens <= self.max_context_tokens:
            raise IndexError(f"{num_tokens} tokens: outside 0..{self.max_context_tokens}")
        return self.req_to_token[row, :num_tokens]

    def check_integrity(self) -> None:
        self.rows.check_integrity()
