"""Block hashes of a trace prompt for the vLLM replay: one per full block, chained.

vLLM names block ``b`` by the hash of every token up to its end (`get_request_block_hasher`
→ `hash_block_tokens`, chained), so two blocks share a hash exactly when their prefixes
are equal. A Mooncake trace names each 512-token segment by an id, equal ids meaning equal
tokens (`kvledger.sequential.keys`). When the block ``B`` divides the segment, block
``b = j·k + r`` (``k = 512 / B``) lies in segment ``j`` at offset ``r``, and its prefix is
fixed by the segment ids ``H[0..j]`` and ``r`` alone. So the chain is interned once per
segment (``c_j`` names ``H[0..j]``) and block ``b`` is named ``c_j·k + r``: the same
equality as chaining the block keys of `PromptKeyer` (``H[j]·k + r``) one block at a time,
with ``k`` times fewer dictionary steps. Other block sizes chain `PromptKeyer`'s keys.

>>> from kvledger.sim.workload import Request
>>> r = Request(rid=0, arrival_ms=0.0, segment_ids=(7, 9), segment_tokens=(512, 200),
...             output_tokens=0)
>>> h = PromptBlockHashes(block_tokens=128)
>>> h.hashes(r)  # 4 blocks of segment 7 (chain id 1), 1 full block of segment 9 (id 2)
[4, 5, 6, 7, 8]
>>> h.hashes(Request(rid=1, arrival_ms=0.0, segment_ids=(7, 3), segment_tokens=(512, 512),
...                  output_tokens=0))  # shares segment 7, then diverges
[4, 5, 6, 7, 12, 13, 14, 15]
"""

from __future__ import annotations

import numpy as np

from kvledger.blocks import BlockHashChain
from kvledger.sequential.keys import PromptKeyer
from kvledger.sim.trace import TRACE_PAGE_TOKENS
from kvledger.sim.workload import Request


class PromptBlockHashes:
    """Hashes for one replay: every request's hashes come from one chain."""

    def __init__(self, block_tokens: int) -> None:
        self._keyer = PromptKeyer(block_tokens)  # checks block_tokens
        self.block_tokens = block_tokens
        self._chain = BlockHashChain()
        self._aligned = TRACE_PAGE_TOKENS % block_tokens == 0
        self._per_segment = TRACE_PAGE_TOKENS // block_tokens
        self._offsets = np.arange(self._per_segment, dtype=np.int64)

    def hashes(self, request: Request) -> list[int]:
        if not self._aligned:
            return self._chain.hashes(self._keyer.keys(request).tolist())
        num_blocks = request.prompt_tokens // self.block_tokens
        per = self._per_segment
        segments = self._chain.hashes(request.segment_ids[: -(-num_blocks // per)])
        names = np.asarray(segments, dtype=np.int64)[:, None] * per + self._offsets
        return names.reshape(-1)[:num_blocks].tolist()
