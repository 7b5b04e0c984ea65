"""What one forward pass is given: the chunks of a batch and the store they read and write.

A ``SeqChunk`` is the next piece of one request: ``n`` new tokens at positions
``start .. start+n−1``. Region diagram (kpool 4, a chunk starting mid-group)::

    positions   0 1 2 3 | 4 5 6 7 | 8 9 . . | . .
                ^^^^^^^^^^^^^^^^^^^^^^^^^ token_locs covers 0 .. start+n−1
                cached (start = 9)   ↑ 8 waits in the compress tail
                                        new tokens 9 .. 13 (n = 5)

The store is the only way the model touches cached data; ``kvledger.cache`` backs it with
the device pools, ``engine.dense`` with private buffers for the cache-free run. Layer ids are
global decoder-layer ids; the store maps them to its own dense ids.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch


@dataclass(frozen=True, slots=True, kw_only=True)
class SeqChunk:
    input_ids: torch.Tensor  # (n,) int64 token ids of the new tokens, n ≥ 1
    start_tokens: int  # tokens of this request already in the cache (state and KV)
    token_locs: torch.Tensor  # (start + n,) int64 token slot of every position so far
    state_slot: int  # the request's own state slot: read when start > 0, written at the end
    tail_row: int  # compress-tail row (the request row)
    # (length_tokens, state slot): also save the state after this many tokens, for the cache
    checkpoints: tuple[tuple[int, int], ...] = ()

    def __post_init__(self) -> None:
        n = self.num_new_tokens
        if n < 1:
            raise ValueError("SeqChunk.input_ids: a chunk needs at least one new token")
        if self.start_tokens < 0:
            raise ValueError(f"SeqChunk.start_tokens: expected ≥ 0, got {self.start_tokens}")
        if len(self.token_locs) != self.end_tokens:
            raise ValueError(f"SeqChunk.token_locs: expected {self.end_tokens} slots "
                             f"(start {self.start_tokens} + {n} new), got {len(self.token_locs)}")
        for length, _ in self.checkpoints:
            if not self.start_tokens < length <= self.end_tokens:
                raise ValueError(f"SeqChunk.checkpoints: length {length} outside "
                                 f"{self.start_tokens + 1}..{self.end_tokens}")

    @property
    def num_new_tokens(self) -> int:
        return len(self.input_ids)

    @property
    def end_tokens(self) -> int:
        return self.start_tokens + self.num_new_tokens


class ModelStore(Protocol):
    """Cached data of full and linear layers, addressed by slot. Reads return float32.

    Writes quantise to the store's layout (fp8 scaled or bf16 rows; bf16 conv state; the
    configured temporal dtype); a read of what was written returns the rounded values, so the
    model always reads back before it uses a latent or index key (cached or just computed).
    """

    def write_latents(self, layer_id: int, token_locs: torch.Tensor, latent: torch.Tensor) -> None: ...

    def read_latents(self, layer_id: int, token_locs: torch.Tensor) -> torch.Tensor: ...

    def write_index_keys(self, layer_id: int, token_locs: torch.Tensor, keys: torch.Tensor) -> None:
        """Pooled keys, one per group, addressed by the token slot of the group's first token."""

    def read_index_keys(self, layer_id: int, token_locs: torch.Tensor) -> torch.Tensor: ...

    def tail_buffers(self, layer_id: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(key, score) bf16 tensors (rows, width_tokens, head_dim), indexed by tail row."""

    def read_state(self, layer_id: int, slots: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(conv (n, K−1, C), temporal (n, H, dk, dv)) in float32."""

    def write_state(self, layer_id: int, slots: torch.Tensor, conv: torch.Tensor,
                    temporal: torch.Tensor) -> None: ...
