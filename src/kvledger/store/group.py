"""Object groups: a tree node's pages and its state slot, committed by a manifest.

A hybrid model's KV is useless without the linear-attention state after it (and, for DSA,
without the index keys of every page), so a node is stored as one group and restored whole
or not at all. The store has no group primitive, so the group's objects go first and the
manifest, written only once all of them are acknowledged, commits the group::

    page i (first ≤ i < end)   <tag>:<key i>:kv    every full layer's P KV rows, then every
                                                    layer's index-key page
    state after page end − 1   <tag>:<key end−1>:st  conv then temporal, every linear layer
    manifest                   <tag>:<key end−1>:mf  first page, then (bytes, XXH3-64) of
                                                    each object above; its own XXH3-64 last

A group's first page is where its parent group ends (0 at the root), so manifests chain
back to the root and any prefix that ends on a manifest is complete. Only a page's content
(never a tree's shape) fixes its key, so instances whose trees split differently still
share page objects. A group whose manifest is missing, or whose manifest, page or state is
absent, of the wrong size or fails its digest, is a miss. The digest catches corruption, not
an adversary (the store is trusted), so a 64-bit non-cryptographic hash suffices (an
accidental match is ~2^-64); XXH3-64 hashes at ~16 GB/s where zlib's CRC-32 ran at ~1.9 GB/s,
which on a 148 MB state object made the check, not the store, the cost of a read.

>>> m = Manifest(first_page=2, page_sizes=(5, 5), page_digests=(1, 2), state_size=3,
...              state_digest=9)
>>> Manifest.parse(m.encode(tag="abcdefabcdef"), tag="abcdefabcdef") == m
True
>>> Manifest.parse(m.encode(tag="abcdefabcdef")[:-1], tag="abcdefabcdef") is None
True
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

import xxhash

from kvledger.store.backend import Payload
from kvledger.store.keys import Namespace, ObjectKind, object_key

MAGIC = b"KVLM"
VERSION = 2  # 1: CRC-32 digests
_HEAD = struct.Struct("<4sH12sII")  # magic, version, namespace tag, first page, pages
_OBJ = struct.Struct("<QQ")  # bytes, XXH3-64
_TAIL = struct.Struct("<Q")  # XXH3-64 of all before it


def digest(data: Payload) -> int:
    """XXH3-64 of the bytes (the buffer itself: no copy)."""
    return xxhash.xxh3_64_intdigest(data)


@dataclass(frozen=True, slots=True, kw_only=True)
class Manifest:
    first_page: int
    page_sizes: tuple[int, ...]
    page_digests: tuple[int, ...]
    state_size: int
    state_digest: int

    @property
    def end_page(self) -> int:
        return self.first_page + len(self.page_sizes)

    @property
    def total_bytes(self) -> int:
        return sum(self.page_sizes) + self.state_size

    def encode(self, *, tag: str) -> bytes:
        body = _HEAD.pack(MAGIC, VERSION, tag.encode(), self.first_page, len(self.page_sizes))
        body += b"".join(_OBJ.pack(s, c) for s, c in zip(self.page_sizes, self.page_digests,
                                                           strict=True))
        body += _OBJ.pack(self.state_size, self.state_digest)
        return body + _TAIL.pack(digest(body))

    @classmethod
    def parse(cls, data: bytes | None, *, tag: str) -> Manifest | None:
        """The manifest, or None when it is absent, truncated, corrupt or foreign."""
        if data is None or len(data) < _HEAD.size + _OBJ.size + _TAIL.size:
            return None
        body, (want,) = data[:-_TAIL.size], _TAIL.unpack(data[-_TAIL.size:])
        if digest(body) != want:
            return None
        magic, version, got_tag, first, pages = _HEAD.unpack_from(body)
        if (magic, version, got_tag) != (MAGIC, VERSION, tag.encode()):
            return None
        if len(body) != _HEAD.size + (pages + 1) * _OBJ.size:
            return None
        objs = [_OBJ.unpack_from(body, _HEAD.size + i * _OBJ.size) for i in range(pages + 1)]
        return cls(first_page=first, page_sizes=tuple(s for s, _ in objs[:-1]),
                   page_digests=tuple(c for _, c in objs[:-1]), state_size=objs[-1][0],
                   state_digest=objs[-1][1])


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupWrite:
    """The objects of one group, ready to put: `objects` first, then `manifest`."""

    objects: tuple[tuple[str, Payload], ...]
    manifest: tuple[str, bytes]

    @property
    def payload_bytes(self) -> int:
        return sum(len(memoryview(v)) for _, v in self.objects)


def group_write(ns: Namespace, keys: Sequence[str], *, first_page: int,
                pages: Sequence[Payload], state: Payload) -> GroupWrite:
    """The group of pages first_page .. first_page + len(pages) − 1 of the prefix whose page
    keys are `keys`, ending in `state`."""
    end = first_page + len(pages)
    if not pages or end > len(keys):
        raise ValueError(f"group_write: pages {first_page}..{end - 1} outside the "
                         f"{len(keys)}-page prefix (or empty)")
    objects = [(object_key(ns, keys[first_page + i], ObjectKind.KV), p)
               for i, p in enumerate(pages)]
    last = keys[end - 1]
    objects.append((object_key(ns, last, ObjectKind.STATE), state))
    manifest = Manifest(first_page=first_page, page_sizes=tuple(len(memoryview(p)) for p in pages),
                        page_digests=tuple(digest(p) for p in pages),
                        state_size=len(memoryview(state)), state_digest=digest(state))
    return GroupWrite(objects=tuple(objects),
                      manifest=(object_key(ns, last, ObjectKind.MANIFEST),
                                manifest.encode(tag=ns.tag)))
