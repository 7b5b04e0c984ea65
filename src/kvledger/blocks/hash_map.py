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

The replay moves hundreds of blocks per request, so the hot paths also come in runs, one
call per request instead of one per block (same result as the single calls in order):

>>> m.insert_run([7, 8, 5], [20, 21, 22]); m.pop_run([7, 5], [20, 12])
>>> m.prefix_run([4, 8, 9], scale=2, offset=0)  # keys 8, 16: 8 is cached, 16 breaks
[21]
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

    def insert_run(self, keys: list[int], block_ids: list[int]) -> None:
        """`insert` of each (key, block) pair, in order."""
        table = self._key_to_blocks
        setdefault = table.setdefault
        for key, block_id in zip(keys, block_ids, strict=True):
            # One lookup for the common case: the key names no block yet.
            blocks = setdefault(key, block_id)
            if blocks is block_id:
                continue
            if type(blocks) is int:
                table[key] = {blocks: None, block_id: None}
            else:
                blocks[block_id] = None
        self._num_blocks += len(keys)

    def pop_run(self, keys: list[int], block_ids: list[int]) -> None:
        """`pop` of each (key, block) pair, in order."""
        table = self._key_to_blocks
        for key, block_id in zip(keys, block_ids, strict=True):
            blocks = table.get(key)
            if blocks == block_id and type(blocks) is int:
                del table[key]
            else:
                self.pop(key, block_id)
                self._num_blocks += 1  # pop counted it already
        self._num_blocks -= len(keys)

    def prefix_run(self, block_hashes: list[int], *, scale: int, offset: int) -> list[int]:
        """The cached block of each key ``hash · scale + offset`` in order, up to the first
        hash with none (a chained prefix breaks there): `get` over the run."""
        table, out = self._key_to_blocks, []
        get, append = table.get, out.append
        for block_hash in block_hashes:
            blocks = get(block_hash * scale + offset)
            if blocks is None:
                break
            append(blocks if type(blocks) is int else next(iter(blocks)))
        return out

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
