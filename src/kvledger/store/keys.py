"""Prefix-addressed object keys: a salted hash chain over page token ids.

Any instance that serves the same model with the same layout on the same rank computes the
same key for the same prefix, so instances share a store without talking to each other.
The chain follows SGLang's ``get_hash_str`` (``mem_cache/hicache_storage.py``): page i's
digest is SHA-256 over page i−1's digest followed by page i's token ids as 4-byte
little-endian integers. Unlike SGLang, the chain is seeded with the namespace's digest
(model, layout, rank) instead of an empty prior, so two models never collide on a key even
when their tokens agree; SGLang appends a model/rank suffix to each key instead.

An object key is ``<namespace tag>:<page digest>:<kind>`` (kinds: ``kv`` page payload,
``st`` state slot, ``mf`` manifest), readable in a server's key listing.

>>> ns = Namespace(model="tiny", layout="fp8-page_first", rank=0, ranks=1)
>>> keys = page_keys(ns, list(range(32)), page_tokens=16)
>>> len(keys), keys == page_keys(ns, list(range(40)), page_tokens=16)  # whole pages only
(2, True)
>>> keys[0] == page_keys(ns, list(range(16)) + [7] * 16, page_tokens=16)[0]  # prefix-addressed
True
>>> object_key(ns, keys[1], ObjectKind.MANIFEST).split(":")[2]
'mf'
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import Enum

import numpy as np

KEY_SCHEME = "kvl1"  # bump when the object format changes: old objects then simply miss


class ObjectKind(Enum):
    KV = "kv"  # one page: every full layer's KV rows, then every layer's index-key page
    STATE = "st"  # one state slot: every linear layer's conv, then temporal state
    MANIFEST = "mf"  # commits a group; written last


@dataclass(frozen=True, slots=True, kw_only=True)
class Namespace:
    """What must agree for two instances to share objects: the model, the byte layout of a
    page (row format, page size, pools present) and the rank's slice of each page."""

    model: str
    layout: str
    rank: int = 0
    ranks: int = 1
    salt: str = ""  # separates deployments (or tests) sharing one store; "" for none

    def __post_init__(self) -> None:
        if not self.model or not self.layout:
            raise ValueError("Namespace: model and layout must be non-empty")
        if not 0 <= self.rank < self.ranks:
            raise ValueError(f"Namespace: rank {self.rank} outside 0..{self.ranks - 1}")

    @property
    def text(self) -> str:
        text = f"{KEY_SCHEME}/{self.model}/{self.layout}/rank{self.rank}of{self.ranks}"
        return text + (f"/salt={self.salt}" if self.salt else "")

    @property
    def seed(self) -> bytes:
        """The chain's salt: the digest of the namespace text."""
        return hashlib.sha256(self.text.encode()).digest()

    @property
    def tag(self) -> str:
        """A short prefix naming the namespace in every key (12 hex digits)."""
        return self.seed.hex()[:12]


def page_keys(ns: Namespace, tokens, *, page_tokens: int) -> list[str]:
    """Hex digests of the chain, one per whole page of ``tokens`` (a partial tail page has
    no key: only whole pages are cached)."""
    if page_tokens < 1:
        raise ValueError(f"page_tokens: expected ≥ 1, got {page_tokens}")
    ids = np.asarray(tokens, dtype=np.int64)
    if ids.size and (ids.min() < 0 or ids.max() >= 2**31):
        raise ValueError("tokens: ids must be in 0 .. 2**31 − 1 to hash as int32")
    words = ids.astype("<i4")
    prior, keys = ns.seed, []
    for page in range(len(words) // page_tokens):
        chunk = words[page * page_tokens:(page + 1) * page_tokens].tobytes()
        prior = hashlib.sha256(prior + chunk).digest()
        keys.append(prior.hex())
    return keys


def object_key(ns: Namespace, page_key: str, kind: ObjectKind) -> str:
    return f"{ns.tag}:{page_key}:{kind.value}"
