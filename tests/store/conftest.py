"""Real store servers on free loopback ports, one per test session (faults start their own).

A backend whose server binary is missing skips with the reason; `.ci/run` installs both
(apt: redis-server, libibverbs1; pip: the `store` extra), so CI runs every one of them.
"""

from __future__ import annotations

import os

import pytest

from kvledger.store.backend import BackendKind, StoreUnavailable
from kvledger.store.servers import find_binary, start_server

os.environ.setdefault("MC_LOG_LEVEL", "ERROR")  # Mooncake's C++ logs: errors only

SERVED = (BackendKind.REDIS, BackendKind.MOONCAKE)


def require_server(kind: BackendKind) -> None:
    if find_binary(kind) is None:
        pytest.skip(f"{kind.value}: no server binary found (redis-server / mooncake_master)")
    if kind is BackendKind.MOONCAKE:
        pytest.importorskip("mooncake.store", reason="the mooncake-transfer-engine wheel")
    if kind is BackendKind.REDIS:
        pytest.importorskip("redis", reason="the redis client")


def launch(kind: BackendKind, **options):
    """A server for tests; Mooncake's lease is 50 ms so deletes need only a short wait."""
    require_server(kind)
    if kind is BackendKind.MOONCAKE:
        options.setdefault("lease_ms", 50)
    try:
        return start_server(kind, **options)
    except StoreUnavailable as e:  # installed but cannot start here: say why
        pytest.fail(f"{kind.value} is installed but did not start: {e}")


@pytest.fixture(scope="session")
def servers():
    started = {}
    yield lambda kind: started.setdefault(kind, launch(kind))
    for server in started.values():
        server.stop()


@pytest.fixture(scope="session")
def clients(servers, tmp_path_factory):
    """One client per backend kind for the session (a Mooncake client mounts DRAM)."""
    opened = {}

    def get(kind: BackendKind):
        if kind not in opened:
            if kind is BackendKind.LOCAL_DIR:
                from kvledger.store.local_dir import LocalDirStore
                opened[kind] = LocalDirStore(tmp_path_factory.mktemp("store"))
            else:
                opened[kind] = servers(kind).backend()
        return opened[kind]
    yield get
    for client in opened.values():
        client.close()


@pytest.fixture(params=[k.value for k in BackendKind])
def backend(request, clients):
    return clients(BackendKind(request.param))
