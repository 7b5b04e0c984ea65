"""LocalDirStore: one file per object in a directory — no server, for tests and one machine.

A put writes a temporary file and renames it over the key's name, so a reader sees the whole
object or none (POSIX rename is atomic); a crashed writer leaves only a ``.tmp`` file that
no key names. Keys become file names as they are (they are ``[0-9a-z:]`` only).

>>> import tempfile
>>> store = LocalDirStore(tempfile.mkdtemp())
>>> store.put([("a:1:kv", b"xyz")]), store.exists(["a:1:kv", "a:2:kv"]), store.get(["a:1:kv"])
([True], [True, False], [b'xyz'])
>>> store.delete(["a:1:kv", "a:1:kv"])
[True, False]
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Sequence
from pathlib import Path

from kvledger.store.backend import BackendKind, Payload, StoreBackend

_KEY = re.compile(r"^[0-9a-z:]{1,200}$")


class LocalDirStore(StoreBackend):
    kind = BackendKind.LOCAL_DIR

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        if not _KEY.match(key):
            raise ValueError(f"store key {key!r}: expected 1-200 characters of [0-9a-z:]")
        return self.root / key

    def exists(self, keys: Sequence[str]) -> list[bool]:
        return [self._path(k).is_file() for k in keys]

    def get(self, keys: Sequence[str], sizes: Sequence[int] | None = None) -> list[bytes | None]:
        out: list[bytes | None] = []
        for key in keys:
            try:
                out.append(self._path(key).read_bytes())
            except FileNotFoundError:
                out.append(None)
        return out

    def put(self, items: Sequence[tuple[str, Payload]]) -> list[bool]:
        done = []
        for key, value in items:
            path = self._path(key)
            tmp = path.with_name(f"{path.name}.{uuid.uuid4().hex}.tmp")
            try:
                with open(tmp, "wb") as f:
                    f.write(value)
                os.replace(tmp, path)
                done.append(True)
            except OSError:  # disk full, permissions: not stored
                tmp.unlink(missing_ok=True)
                done.append(False)
        return done

    def delete(self, keys: Sequence[str]) -> list[bool]:
        out = []
        for key in keys:
            try:
                self._path(key).unlink()
                out.append(True)
            except FileNotFoundError:
                out.append(False)
        return out
