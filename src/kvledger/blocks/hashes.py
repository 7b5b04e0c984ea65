"""Chained block hashes: block ``j`` is named by its parent's name and its own tokens.

vLLM hashes every full block of a request as ``hash(parent_hash, block_tokens, extra_keys)``
(`vllm/v1/core/kv_cache_utils.py`: `hash_block_tokens`, called block by block by
`get_request_block_hasher`), so two blocks share a hash exactly when their whole prefixes are
equal. Here the caller gives one content key per full block (equal iff the block's tokens
are) and the chain interns ``(parent, content)`` pairs into small ints: the same equality as
vLLM's sha256 chain, without collisions, and cheap to use as a dict key.

Assumptions: no multimodal or LoRA extra keys (vLLM's ``extra_keys`` is None for text).

>>> chain = BlockHashChain()
>>> chain.hashes([7, 8, 9]), chain.hashes([7, 8, 5]), chain.hashes([8])
([1, 2, 3], [1, 2, 4], [5])
"""

from __future__ import annotations

from collections.abc import Iterable


class BlockHashChain:
    """Interns ``(parent hash, block content)``; hash 0 is the empty prefix (no block)."""

    def __init__(self) -> None:
        self._pair_to_hash: dict[tuple[int, int], int] = {}

    @property
    def num_hashes(self) -> int:
        return len(self._pair_to_hash)

    def check_integrity(self) -> None:
        """Hashes are 1..n, each naming one (parent, content) pair whose parent came first."""
        seen = sorted(self._pair_to_hash.values())
        if seen != list(range(1, len(seen) + 1)):
            raise RuntimeError("block hashes: not the numbers 1..n, each once")
        for (parent, _), block_hash in self._pair_to_hash.items():
            if parent >= block_hash:
                raise RuntimeError(f"block hashes: {block_hash} chains onto a later {parent}")

    def hashes(self, block_contents: Iterable[int]) -> list[int]:
        """One hash per full block, each naming the whole prefix up to that block's end."""
        table = self._pair_to_hash
        parent, out = 0, []
        for content in block_contents:
            pair = (parent, int(content))
            parent = table.get(pair, 0)
            if not parent:
                parent = len(table) + 1
                table[pair] = parent
            out.append(parent)
        return out
