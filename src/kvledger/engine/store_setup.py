"""The store a verify workload runs on: a real server started on loopback for the run.

``kvledger verify --workload l3-redis`` (or ``l3-mooncake``) starts the server on a free
127.0.0.1 port, opens a client, runs, and stops both; ``l3-local-dir`` uses a temporary
directory. A missing server binary is an input error naming the workload and the install.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator

from kvledger.engine.memory import StoreTierSpec
from kvledger.store.backend import BackendKind, StoreUnavailable
from kvledger.store.local_dir import LocalDirStore
from kvledger.store.servers import start_server


@contextlib.contextmanager
def store_spec(kind: BackendKind, *, what: str) -> Iterator[StoreTierSpec]:
    os.environ.setdefault("MC_LOG_LEVEL", "ERROR")  # Mooncake's C++ logs: errors only
    if kind is BackendKind.LOCAL_DIR:
        with tempfile.TemporaryDirectory(prefix="kvledger-store-") as root:
            yield StoreTierSpec(backend=LocalDirStore(root))
        return
    try:
        server = start_server(kind)
    except StoreUnavailable as e:
        raise ValueError(f"{what}: cannot start the {kind.value} server: {e}") from None
    with server:
        backend = server.backend()
        try:
            yield StoreTierSpec(backend=backend)
        finally:
            backend.close()
