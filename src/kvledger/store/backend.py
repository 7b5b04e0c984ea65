"""StoreBackend: the batch key-value interface every store tier backend offers.

Four batch calls, each one round trip where the server allows it:

    exists(keys)   -> [bool]          present now (it may vanish a moment later)
    get(keys)      -> [bytes | None]  None: absent (never stored, evicted, expired)
    put(items)     -> [bool]          False: not stored (full, refused); a key already
                                      present counts as stored — keys are content
                                      addresses, the same key always carries the same bytes
    delete(keys)   -> [bool]          False: absent, or still leased (Mooncake refuses to
                                      remove an object inside its lease)

A backend never raises for a missing or refused object; it raises `StoreUnavailable` when
the server cannot be reached or does not answer in time, and the tier above turns that
into a miss (recompute), never into an error a request sees.

>>> BackendKind("redis").value, sorted(k.value for k in BackendKind)
('redis', ['local-dir', 'mooncake', 'redis'])
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from enum import Enum

Payload = bytes | bytearray | memoryview


class BackendKind(Enum):
    LOCAL_DIR = "local-dir"
    REDIS = "redis"
    MOONCAKE = "mooncake"


class StoreUnavailable(RuntimeError):
    """The server could not be reached or timed out (the message says which and where)."""


class StoreBackend(ABC):
    kind: BackendKind

    @abstractmethod
    def exists(self, keys: Sequence[str]) -> list[bool]: ...

    @abstractmethod
    def get(self, keys: Sequence[str], sizes: Sequence[int] | None = None) -> list[bytes | None]:
        """`sizes`: the expected bytes per key where the caller knows them (a manifest
        says), so a backend that stages batches in a fixed buffer can cut them."""

    @abstractmethod
    def put(self, items: Sequence[tuple[str, Payload]]) -> list[bool]: ...

    @abstractmethod
    def delete(self, keys: Sequence[str]) -> list[bool]: ...

    def close(self) -> None:  # noqa: B027 - optional hook, most backends hold a connection
        """Release the connection (idempotent)."""

    def __enter__(self) -> StoreBackend:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
