"""Every backend against its real server: batch exists / get / put / delete."""

from __future__ import annotations

import os
import uuid

from kvledger.store.backend import BackendKind


def _keys(n: int) -> list[str]:
    tag = uuid.uuid4().hex[:12]
    return [f"{tag}:{i:064x}:kv" for i in range(n)]


def test_round_trip_batches(backend):
    keys = _keys(5)
    values = [os.urandom(size) for size in (1, 100, 4096, 1 << 20, 3 << 20)]
    assert backend.exists(keys) == [False] * 5
    assert backend.get(keys) == [None] * 5
    assert backend.put(list(zip(keys, values, strict=True))) == [True] * 5
    assert backend.exists(keys + _keys(1)) == [True] * 5 + [False]
    assert backend.get(keys, [len(v) for v in values]) == values
    assert backend.get(keys) == values  # without size hints too


def test_memoryview_payloads_and_existing_keys(backend):
    keys = _keys(2)
    data = bytearray(os.urandom(8192))
    assert backend.put([(keys[0], memoryview(data)[:4096]), (keys[1], memoryview(data)[4096:])])
    assert backend.get(keys) == [bytes(data[:4096]), bytes(data[4096:])]
    assert backend.put([(keys[0], bytes(data[:4096]))]) == [True]  # same key, same bytes


def test_delete_then_miss(backend):
    keys = _keys(3)
    backend.put([(k, b"v") for k in keys])
    if backend.kind is BackendKind.MOONCAKE:
        import time
        time.sleep(0.2)  # past the 50 ms lease the test master grants
    assert backend.delete(keys[:2] + _keys(1)) == [True, True, False]
    assert backend.exists(keys) == [False, False, True]
    assert backend.get(keys) == [None, None, b"v"]


def test_empty_batches(backend):
    assert backend.exists([]) == [] and backend.get([]) == [] and backend.put([]) == []
    assert backend.delete([]) == []


def test_batches_larger_than_a_mooncake_staging_buffer(clients):
    """A batch is cut to the client's local buffer (64 MiB, half of it per batch)."""
    store = clients(BackendKind.MOONCAKE)
    keys = _keys(24)
    values = [os.urandom(2 << 20) for _ in keys]  # 48 MiB in all
    assert store.put(list(zip(keys, values, strict=True))) == [True] * 24
    assert store.get(keys, [len(v) for v in values]) == values
