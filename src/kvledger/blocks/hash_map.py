"""Hash → cached blocks: vLLM's `BlockHashToBlockMap` (`vllm/v1/core/block_pool.py`).

One hash may name several blocks: a hybrid request whose attention hit is cut back to a
shallower state recomputes blocks that are already cached and caches them again. Lookups
return the oldest block still cached under the key (`get_one_block`); eviction removes one
block by id (`pop`).

>>> m = HashToBlocks()
>>> m.insert(5, 11); m.insert(5, 12); m.get(5)
11
>>> m.pop(5, 11); m.get(5), len(m)
(12, 1)
"""

from __future__ import annotations


class HashToBlocks:
    """Keys are ints (group and block hash folded by the pool); values block ids."""

    def __init__(self) -> None:
        self._key_to_blocks: dict[int, int | dict[int, None]] = {}
        self._num_blocks = 0

    def __len__(self) -> int:
        return self._num_blocks

    def get(self, key: int) -> int | None:
        blocks = self._key_to_blocks.get(key)
        if blocks is None or isinstance(blocks, int):
            return blocks
        return next(iter(blocks))

    def blocks(self, key: int) -> tuple[int, ...]:
        """Every block cached under ``key``, oldest first."""
        blocks = self._key_to_blocks.get(key)
        if blocks is None:
            return ()
        return (blocks,) if isinstance(blocks, int) else tuple(blocks)

    def insert(self, key: int, block_id: int) -> None:
        blocks = self._key_to_blocks.get(key)
        if blocks is None:
            self._key_to_blocks[key] = block_id
        elif isinstance(blocks, int):
            self._key_to_blocks[key] = {blocks: None, block_id: None}
        else:
            blocks[block_id] = None
        self._num_blocks += 1

    def pop(self, key: int, block_id: int) -> None:
        blocks = self._key_to_blocks.get(key)
        if blocks == block_id:
            del self._key_to_blocks[key]
        elif isinstance(blocks, dict) and block_id in blocks:
            del blocks[block_id]
            if not blocks:
                del self._key_to_blocks[key]
        else:
            raise RuntimeError(f"hash map: block {block_id} is not cached under key {key}")
        self._num_blocks -= 1

    def check_integrity(self) -> None:
        """The block count matches the entries, and no key holds an empty set."""
        count = 0
        for blocks in self._key_to_blocks.values():
            if isinstance(blocks, dict) and not blocks:
                raise RuntimeError("hash map: a key with no blocks")
            count += 1 if isinstance(blocks, int) else len(blocks)
        if count != self._num_blocks:
            raise RuntimeError(f"hash map: {count} entries, counted {self._num_blocks}")

    def items(self):
        """(key, block id) pairs, for integrity checks."""
        for key, blocks in self._key_to_blocks.items():
            if isinstance(blocks, int):
                yield key, blocks
            else:
                for block_id in blocks:
                    yield key, block_id
